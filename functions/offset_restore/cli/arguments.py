"""What every command shares: the strict parser, the connection options, value parsers that refuse
nonsense by name, the single-writer lock of a CLI run (options filled from a deployed stack: cli/aws.py), and the
one way a result is written (a summary for people, or one JSON document with the summary on stderr).
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeAlias

from pydantic import ValidationError

from offset_restore.apply.locks import TargetLock
from offset_restore.apply.run import Sealing
from offset_restore.apply.seal import KEY_ENV
from offset_restore.cli.aws import aws_client
from offset_restore.errors import BadInputError
from offset_restore.kafka import tls_files
from offset_restore.kafka.client_properties import read_client_properties
from offset_restore.kafka.connection import FETCH_MAX_BYTES, ConnectionSettings, password_from_env
from offset_restore.snapshot.filters import (
    DEFAULT_EXCLUDE_GROUPS,
    MAX_PATTERN_LENGTH,
    NameFilter,
    compile_pattern,
    pattern_for,
)
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.model import parse_time
from offset_restore.terminal import printable, printable_line
from offset_restore.validation import describe

__all__ = [
    "ALL_OF_IT",
    "LOCK_TTL_S",
    "Commands",
    "StrictParser",
    "add_allow_rewind",
    "add_connection",
    "add_group_choice",
    "add_plan_key",
    "add_remove_static_members",
    "add_selection",
    "add_source_connection",
    "chosen_groups",
    "connection_settings",
    "iso_time",
    "margin_ms",
    "non_negative",
    "restore_complete",
    "rewind_groups",
    "sealing",
    "seconds",
    "selection",
    "source_connection_settings",
    "target_lock",
    "write_result",
]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where each command module registers its parser."""


def write_result(
    args: argparse.Namespace, out: TextIO, err: TextIO, document: str, summary: str | Sequence[str]
) -> None:
    """With ``--json``, stdout holds only the JSON document (a script parses it) and the summary goes
    to stderr; otherwise the summary goes to stdout, its control characters shown: given as lines,
    every one of them in each line (a newline inside a group id cannot split its line,
    ``printable_line``); given as text, all but its line breaks and tabs (``printable``)."""
    text = printable(summary) if isinstance(summary, str) else "".join(printable_line(s) + "\n" for s in summary)
    if args.json:
        out.write(document + "\n")
    (err if args.json else out).write(text)


def add_execute(parser: argparse.ArgumentParser) -> None:
    """kafka-consumer-groups' convention for a command that writes offsets: only with ``--execute``;
    without it (or with ``--dry-run``, said explicitly) a preview that writes nothing."""
    parser.add_argument(
        "--execute", action="store_true", help="write (without it: a preview of every change; nothing is written)"
    )
    parser.add_argument("--dry-run", action="store_true", help="a preview, said explicitly (the default)")


def add_remove_static_members(parser: argparse.ArgumentParser) -> None:
    """The explicit end of a wait on static members (never implicit: a static member may be a consumer that
    still runs, and removing it makes its group rebalance)."""
    parser.add_argument(
        "--remove-static-members",
        action="store_true",
        help="remove the static members (group.instance.id) of each group waited for on the target, each once, "
        "instead of waiting until their session timeout ends after their consumers stop; each removal is "
        "printed and recorded (a consumer that still runs joins again and is waited for)",
    )


def previewing(args: argparse.Namespace) -> bool:
    """Whether this run only previews (``add_execute``); both flags at once are refused."""
    if args.execute and args.dry_run:
        raise BadInputError("--execute writes and --dry-run previews: give one")
    return not args.execute


def add_allow_rewind(parser: argparse.ArgumentParser, what: str) -> None:
    """``--allow-rewind [GROUP_REGEX]``: moving a group back past where it is on the target is a
    decision made per group (by name); alone, the option covers every group."""
    parser.add_argument("--allow-rewind", nargs="?", const=".*", metavar="GROUP_REGEX", help=what)


def add_plan_key(parser: argparse.ArgumentParser, *, trust: bool = True) -> None:
    """The key that seals a plan file (apply/seal.py), and (``trust``) the operator's way past its previous
    offsets' seals."""
    parser.add_argument(
        "--plan-key",
        metavar="FILE",
        help=f"the key that seals the plan (default: ${KEY_ENV}, else ~/.config/offset-restore/plan.key; made on "
        "first use): give the key of the machine that planned or applied it",
    )
    if not trust:
        return
    parser.add_argument(
        "--trust-previous-offsets",
        action="store_true",
        help="use the plan's previous offsets without their seals (a plan written without them, or a lost key; "
        "check them first): the end-of-log check still applies",
    )


def sealing(args: argparse.Namespace, *, create: bool) -> Sealing:
    """The CLI's ``Sealing`` for a plan file: always on; ``create`` for a run that may record offsets, made
    only at the default path: a ``--plan-key`` given is the key that sealed the plan, and one that does not
    exist is refused (by ``PlanKey.load``) without a key made there."""
    path = Path(args.plan_key) if args.plan_key else None
    return Sealing(enabled=True, key_path=path, create=create and path is None, trust=args.trust_previous_offsets)


def rewind_groups(args: argparse.Namespace) -> NameFilter | None:
    """The groups ``--allow-rewind`` names, or None when it was not given."""
    if args.allow_rewind is None:
        return None
    return NameFilter(compile_pattern(args.allow_rewind, "--allow-rewind"))


class _ExactGroup(argparse.Action):
    """``--group G``, repeatable, as kafka-consumer-groups takes it: each name matched exactly (its
    metacharacters escaped), all of them kept as the one pattern ``--groups`` would have been."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, value: Any, option: str | None = None) -> None:
        names = [*(getattr(namespace, "group_names", None) or []), str(value)]
        namespace.group_names = names
        namespace.groups = pattern_for(names)


def add_group_choice(parser: argparse.ArgumentParser, what: str, note: str = "") -> None:
    """Which groups a command covers, in our spelling and kafka-consumer-groups': ``--groups REGEX``,
    ``--group G`` (repeatable, exact names) or ``--all-groups`` (the default, said explicitly); one of
    them. Each sets ``args.groups`` (a whole-name pattern, or None for all)."""
    choice = parser.add_mutually_exclusive_group()
    also = f"; {note}" if note else ""
    choice.add_argument(
        "--groups", metavar="REGEX", help=f"{what} whose names REGEX matches whole (default: all{also})"
    )
    choice.add_argument(
        "--group", action=_ExactGroup, dest="groups", metavar="GROUP", help=f"{what}: this one (repeatable; exact name)"
    )
    choice.add_argument("--all-groups", action="store_true", help=f"{what}: every one (the default)")


def chosen_groups(args: argparse.Namespace, option: str = "groups") -> NameFilter | None:
    """``add_group_choice``'s groups as a filter, or None for every group; a bad regex refused by name (the
    names ``--group`` gave, by that option)."""
    names = getattr(args, "group_names", None)
    if names and len(args.groups) > MAX_PATTERN_LENGTH:
        raise BadInputError(
            f"--group: the {len(names)} name(s) given make a pattern of {len(args.groups):,} characters; at most "
            f"{MAX_PATTERN_LENGTH:,} (choose them with --groups REGEX instead)"
        )
    return None if args.groups is None else NameFilter.parse(args.groups, None, option)


def add_selection(parser: argparse.ArgumentParser) -> None:
    """What a snapshot reads (``snapshot``, ``migrate``): the groups, the topics, the evidence records."""
    add_group_choice(parser, "groups to include")
    parser.add_argument(
        "--exclude-groups",
        metavar="REGEX",
        default=DEFAULT_EXCLUDE_GROUPS,
        help="groups to leave out (default: %(default)s); '' leaves none out",
    )
    parser.add_argument("--topics", metavar="REGEX", help="topics to include (whole-name match; default: all)")
    parser.add_argument(
        "--evidence-records",
        type=non_negative,
        default=3,
        metavar="N",
        help="records before the committed one to fingerprint (default: %(default)s; 0: none)",
    )


def selection(args: argparse.Namespace, **more: Any) -> SnapshotOptions:
    """``add_selection``'s options (and ``--offset-header``) as the snapshot's, with ``more`` of its fields;
    a bad value is refused in one line."""
    try:
        return SnapshotOptions(
            groups=args.groups,
            exclude_groups=args.exclude_groups or None,
            topics=args.topics,
            evidence_records=args.evidence_records,
            offset_header=args.offset_header or None,
            **more,
        )
    except ValueError as error:
        raise BadInputError(str(error)) from None


def add_connection(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The connection options; ``required=False`` for a command that may read no cluster (it then
    checks ``--bootstrap-servers`` itself)."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--bootstrap-servers",
        "--bootstrap-server",  # every Kafka tool's spelling
        dest="bootstrap_servers",
        required=required,
        metavar="HOST:PORT[,...]",
        help="brokers of the cluster to read",
    )
    group.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties (security.protocol, sasl.mechanism, sasl.jaas.config, "
        "ssl.truststore.*), as kafka-consumer-groups --command-config reads them; the options below override it",
    )
    group.add_argument(
        "--security-protocol",
        choices=["PLAINTEXT", "SSL", "SASL_SSL"],
        help="default: the --command-config file's, else PLAINTEXT",
    )
    group.add_argument(
        "--sasl-mechanism",
        choices=["AWS_MSK_IAM", "SCRAM-SHA-512", "PLAIN"],
        help="with SASL_SSL; AWS_MSK_IAM signs with the default AWS credentials",
    )
    group.add_argument("--sasl-username", help="with SCRAM-SHA-512 or PLAIN (default: the --command-config file's)")
    group.add_argument(
        "--sasl-password-env", metavar="NAME", help="name of the environment variable holding the SASL password"
    )
    group.add_argument("--ssl-cafile", metavar="PATH", help="CA bundle for SSL and SASL_SSL")
    group.add_argument(
        "--ssl-certfile",
        metavar="PATH",
        help="client certificate for mutual TLS (PEM: the certificate, then its chain)",
    )
    group.add_argument("--ssl-keyfile", metavar="PATH", help="its private key (PEM; default: the --ssl-certfile file)")
    group.add_argument(
        "--ssl-key-password-env", metavar="NAME", help="name of the environment variable holding the key's password"
    )
    group.add_argument(
        "--fetch-max-bytes",
        type=int,
        default=FETCH_MAX_BYTES,
        metavar="BYTES",
        help="the most one fetch response holds (the brokers' limit; default: %(default)s)",
    )
    group.add_argument(
        "--retries",
        type=int,
        default=4,
        metavar="N",
        help="attempts after the first for a request that met a reset connection, a timeout or a moved "
        "coordinator, with exponential back-off and jitter (default: %(default)s)",
    )
    group.add_argument(
        "--connect-timeout",
        type=seconds(0.1, 3600),
        default=30.0,
        metavar="SECONDS",
        help="give up when no broker answers within this time (default: %(default)s)",
    )


def connection_settings(args: argparse.Namespace, err: TextIO | None = None) -> ConnectionSettings:
    """The options over the ``--command-config`` file (its unused keys named on ``err``)."""
    values: dict[str, Any] = {}
    if args.command_config:
        properties = read_client_properties(
            args.command_config, getattr(args, "command_config_option", "--command-config")
        )
        values.update(properties.values)
        values.update(tls_files.materialize(properties))  # a PKCS12 or inline keystore as PEM files
        for warning in properties.warnings:
            (err or sys.stderr).write(f"warning: {printable_line(warning)}\n")
    given = {
        "bootstrap_servers": args.bootstrap_servers,
        "security_protocol": args.security_protocol,
        "sasl_mechanism": args.sasl_mechanism,
        "sasl_username": args.sasl_username,
        "sasl_password": password_from_env(args.sasl_password_env),
        "ssl_cafile": args.ssl_cafile,
        "ssl_certfile": args.ssl_certfile,
        "ssl_keyfile": args.ssl_keyfile,
        "ssl_password": password_from_env(args.ssl_key_password_env, "--ssl-key-password-env"),
    }
    values.update({key: value for key, value in given.items() if value is not None})
    if "bootstrap_servers" not in values:
        raise BadInputError("give --bootstrap-servers (or bootstrap.servers in the --command-config file)")
    try:
        return ConnectionSettings(
            **values,
            connect_timeout_s=args.connect_timeout,
            request_timeout_s=max(args.connect_timeout, 5.0),
            fetch_max_bytes=args.fetch_max_bytes,
            retries=args.retries,
            unfenced=getattr(args, "unfenced", False),
        )
    except ValidationError as error:
        raise BadInputError(describe(error, limit=1)) from None


def iso_time(value: str) -> datetime:
    try:
        return parse_time(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO-8601 time such as 2026-11-29T20:00:00Z") from None


def non_negative(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return number


def seconds(low: float, high: float) -> Callable[[str], float]:
    """A number of seconds between ``low`` and ``high``: never nan or infinite (a nan wait would poll
    without pause, an infinite timeout overflows the client)."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low:g} and {high:g} seconds")
        return number

    return parse


def margin_ms(value: str) -> int:
    """A timestamp margin: whole milliseconds, at most a day (a larger one is a typo, not a margin)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of milliseconds") from None
    if not 0 <= number <= 86_400_000:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 86400000 ms (a day)")
    return number


ALL_OF_IT = "*"


def restore_complete(values: list[str] | None) -> bool | tuple[str, ...]:
    """``--restore-complete`` as the settings have it: True for the whole restore, else the scopes named."""
    scopes = [scope.strip() for value in values or [] for scope in value.split(",") if scope.strip()]
    if ALL_OF_IT in scopes:
        return True
    return tuple(scopes) if scopes else False


LOCK_TTL_S = 120
"""Expiry of a CLI run's lock; its heartbeat renews it every 40 s while the run lives."""


class StrictParser(argparse.ArgumentParser):
    """No abbreviated options ("--sasl-password hunter2" must not pass as --sasl-password-env), and
    unknown arguments named without their values (which may be a password typed by mistake)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            named = [a.split("=", 1)[0] for a in extras if a.startswith("-")]
            options = " ".join(named) or f"{len(extras)} values"
            hints = [hint for hint in (self._did_you_mean(name, parsed) for name in named) if hint]
            self.error(f"unrecognized arguments: {options} (values are not shown){''.join(hints)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        """argparse's refusal in one line, without the usage (``--help`` shows it), and for an option left
        without its value the form that gives a value beginning with ``-`` (a group id may: ``--group=-x``)."""
        missing = re.fullmatch(r"argument (--[\w-]+)(?:/[^:]*)?: expected one argument", message)
        if missing:
            message += f" (a value that begins with '-' is given as {missing.group(1)}=VALUE)"
        self.exit(2, f"{self.prog}: error: {printable_line(message)} ({self.prog} --help lists the options)\n")

    def _did_you_mean(self, typed: str, parsed: argparse.Namespace) -> str:
        """The closest option of this command (or of the subcommand chosen) to one it does not know."""
        known = self._option_names(parsed)
        close = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
        return f"; {typed}: did you mean {close[0]}?" if close else ""

    def _option_names(self, parsed: argparse.Namespace) -> list[str]:
        names = list(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest or "", None) or "")
                if chosen is not None:
                    names += list(chosen._option_string_actions)
        return [name for name in names if name.startswith("--")]


def target_lock(args: argparse.Namespace, cluster: str | None) -> TargetLock | None:
    """The lock ``--lock-table`` asks for; keyed by the target's cluster id once the run connects
    (``cluster``, the name the plan or ``--target-cluster`` gives it, is shown and read for a lock an
    earlier version took under it)."""
    if not args.lock_table:
        return None
    import os
    import socket

    owner = f"cli:{socket.gethostname()}:{os.getpid()}"
    # A short expiry, renewed by the run's heartbeat: a run that died frees the target in two minutes.
    return TargetLock(args.lock_table, aws_client(args, "dynamodb"), cluster or "", owner, ttl_s=LOCK_TTL_S)


def add_source_connection(parser: argparse.ArgumentParser) -> None:
    """The source cluster of a command that reads two (``migrate``): its servers and a client
    properties file for the rest (security, SASL, TLS), as kafka-consumer-groups' --command-config."""
    group = parser.add_argument_group("source connection")
    group.add_argument(
        "--source-bootstrap-servers",
        "--source-bootstrap-server",
        dest="source_bootstrap_servers",
        required=True,
        metavar="HOST:PORT[,...]",
        help="brokers of the source cluster",
    )
    group.add_argument(
        "--source-command-config",
        metavar="FILE",
        help="Kafka client properties of the source (security.protocol, sasl.*, ssl.truststore.*); default: PLAINTEXT",
    )


def source_connection_settings(args: argparse.Namespace, err: TextIO | None = None) -> ConnectionSettings:
    """``add_source_connection``'s options read as ``connection_settings`` reads the target's (the same
    timeouts, retries and fetch limit)."""
    source = dict.fromkeys(
        (
            "security_protocol",
            "sasl_mechanism",
            "sasl_username",
            "sasl_password_env",
            "ssl_cafile",
            "ssl_certfile",
            "ssl_keyfile",
            "ssl_key_password_env",
        )
    )
    return connection_settings(
        argparse.Namespace(
            **{
                **vars(args),
                **source,
                "bootstrap_servers": args.source_bootstrap_servers,
                "command_config": args.source_command_config,
                "command_config_option": "--source-command-config",
            }
        ),
        err,
    )


def add_unfenced(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unfenced",
        action="store_true",
        help='write without the target\'s fence (its transactional ids; docs/design.md, "The fence"): only for a '
        "cluster that does not apply transactional offset commits, which is refused by name otherwise, and only "
        "where no other writer can run",
    )
