"""Kafka client properties (``--command-config FILE``, as ``kafka-consumer-groups --command-config``
reads them), turned into this project's connection settings, so an MSK user's existing
``client.properties`` works unchanged.

Pure: the file's text in, the settings' fields, the stores to convert and the warnings out. What the
Java client does and this one cannot is refused by name (a JKS keystore, with the command that converts
it; a SASL mechanism kafka-python lacks here); what only tunes the Java client is ignored with a
warning, never silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from offset_restore.errors import BadInputError
from offset_restore.files import read_bounded
from offset_restore.kafka.connection import MskIamIdentity

__all__ = ["ClientProperties", "Store", "parse_properties", "read_client_properties"]

_IAM_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
_IAM_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
_PASSWORD_MODULES = (
    "org.apache.kafka.common.security.scram.ScramLoginModule",
    "org.apache.kafka.common.security.plain.PlainLoginModule",
)
_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')
_UNSUPPORTED = {
    "sasl.oauthbearer.token.endpoint.url": "OAUTHBEARER is not supported: use SCRAM or IAM",
}
_TLS_KEYS = frozenset(
    {
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
    }
)
"""The keystore and truststore settings this client reads (``_keystore``, ``_trust``)."""


@dataclass(frozen=True)
class Store:
    """A keystore or truststore the properties name that must be turned into PEM files to be used
    (``kafka.tls_files``): a PKCS12 file and its password, or PEM text given inline."""

    kind: str
    """``PKCS12`` (a file) or ``PEM`` (inline text)."""
    location: str | None = None
    password: str | None = None
    text: str | None = None
    """Inline PEM: the certificate chain (a keystore's, or a truststore's certificates)."""
    key: str | None = None
    """Inline PEM: the keystore's private key."""


@dataclass
class ClientProperties:
    """The connection fields a properties file gives (``ConnectionSettings``' names), what it said
    that is not used, and the stores to turn into PEM files first."""

    values: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    keystore: Store | None = None
    truststore: Store | None = None


MAX_PROPERTIES_BYTES = 1024 * 1024
"""A client configuration is a few hundred bytes; past this it is not one (``/dev/zero`` by mistake
would otherwise be read until memory runs out)."""


def read_client_properties(path: str, option: str = "--command-config") -> ClientProperties:
    """The properties file at ``path``, which ``option`` named (every refusal names the option given)."""
    data = read_bounded(path, limit=MAX_PROPERTIES_BYTES, what=option, kind="a client configuration")
    text = data.decode("latin-1")  # java.util.Properties' own encoding
    if "\x00" in text:
        raise BadInputError(f"{option} {path}: holds NUL bytes: a binary file, not a client configuration")
    return client_properties(parse_properties(text, f"{option} {path}"), path, option)


def parse_properties(text: str, where: str = "properties") -> dict[str, str]:
    """``java.util.Properties``' format: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!``
    comments; a line ending in an odd number of backslashes continues; the usual escapes."""
    found: dict[str, str] = {}
    logical = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            logical += line[:-1]
            continue
        logical += line
        key, value = _split(logical, where, number)
        found[key] = value
        logical = ""
    if logical:
        key, value = _split(logical, where, len(text.splitlines()))
        found[key] = value
    return found


def _split(line: str, where: str, number: int) -> tuple[str, str]:
    match = re.match(r"((?:[^\\=:\s]|\\.)*)\s*[=:\s]?\s*(.*)$", line, re.DOTALL)
    assert match is not None  # the pattern matches every string
    try:
        return _unescape(match.group(1)), _unescape(match.group(2))
    except ValueError:
        raise BadInputError(
            f"{where}: line {number}: a malformed \\uxxxx escape (four hexadecimal digits "
            "after \\u, as Java's Properties requires)"
        ) from None


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code == "u":
            raise ValueError(text)  # \u not followed by four hexadecimal digits
        if code.startswith("u"):
            return chr(int(code[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(code, code)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


def client_properties(props: dict[str, str], path: str, option: str = "--command-config") -> ClientProperties:
    """Map the properties onto the connection settings; refuse what cannot work, name what is unused."""
    result = ClientProperties()
    where = f"{option} {path}"
    for key, why in _UNSUPPORTED.items():
        if props.get(key):
            raise BadInputError(f"{where}: {key}: {why}")
    _security(props, result, where)
    _sasl(props, result, where)
    _keystore(props, result, where)
    _trust(props, result, where)
    if props.get("bootstrap.servers"):
        result.values["bootstrap_servers"] = props["bootstrap.servers"]
    if props.get("client.id"):
        result.values["client_id"] = props["client.id"]
    used = {"security.protocol", "sasl.mechanism", "sasl.jaas.config", "bootstrap.servers", "client.id"}
    used |= _TLS_KEYS
    if props.get("sasl.client.callback.handler.class") == _IAM_HANDLER:  # what makes the Java client sign
        used.add("sasl.client.callback.handler.class")
    ignored = sorted(k for k in props if k not in used and k not in _UNSUPPORTED)
    if ignored:
        result.warnings.append(f"{where}: not used by offset-restore (Java client settings): {', '.join(ignored)}")
    return result


def _security(props: dict[str, str], result: ClientProperties, where: str) -> None:
    protocol = props.get("security.protocol", "").upper()
    if not protocol:
        return
    if protocol not in ("PLAINTEXT", "SSL", "SASL_SSL"):
        raise BadInputError(f"{where}: security.protocol {protocol} is not supported (PLAINTEXT, SSL or SASL_SSL)")
    result.values["security_protocol"] = protocol


def _sasl(props: dict[str, str], result: ClientProperties, where: str) -> None:
    mechanism = props.get("sasl.mechanism", "").upper()
    module, options = _jaas(props.get("sasl.jaas.config", ""), where)
    if not mechanism and module == _IAM_MODULE:
        mechanism = "AWS_MSK_IAM"
    if not mechanism:
        return
    if mechanism not in ("AWS_MSK_IAM", "SCRAM-SHA-512", "PLAIN"):
        raise BadInputError(
            f"{where}: sasl.mechanism {mechanism} is not supported (AWS_MSK_IAM, SCRAM-SHA-512 or PLAIN; MSK's "
            "SCRAM is SCRAM-SHA-512)"
        )
    result.values["sasl_mechanism"] = mechanism
    if mechanism == "AWS_MSK_IAM":
        identity = msk_iam_identity(options, f"{where}: sasl.jaas.config")
        if identity is not None:
            result.values["aws_msk_iam"] = identity
        return
    if not module:
        return  # MSK's SCRAM guide keeps the JAAS in a file of its own: the options give the credentials
    if module not in _PASSWORD_MODULES or not options.get("username") or "password" not in options:
        raise BadInputError(
            f"{where}: sasl.mechanism {mechanism} needs sasl.jaas.config with a username and a password "
            f'({_PASSWORD_MODULES[0]} required username="..." password="...";)'
        )
    result.values["sasl_username"] = options["username"]
    result.values["sasl_password"] = options["password"]


def _jaas(config: str, where: str) -> tuple[str, dict[str, str]]:
    """``Module required key="value" ...;`` -> the module and its options (values unquoted)."""
    config = config.strip()
    if not config:
        return "", {}
    match = re.match(r"([A-Za-z0-9_.$]+)\s+(required|requisite|sufficient|optional)\b(.*?);?\s*$", config, re.DOTALL)
    if match is None:
        raise BadInputError(f"{where}: sasl.jaas.config is not 'LoginModule required key=\"value\" ...;'")
    options = {}
    for option in _JAAS_OPTION.finditer(match.group(3)):
        quoted, bare = option.group(2), option.group(3)
        options[option.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
    return match.group(1), options


def _keystore(props: dict[str, str], result: ClientProperties, where: str) -> None:
    """The client certificate (mutual TLS): a PEM keystore is the certificate and key file as it is; a
    PKCS12 one, or PEM given inline, becomes PEM files (``kafka.tls_files``); a JKS one is refused with
    the keytool command that converts it (no maintained Python reader of JKS exists)."""
    location, kind = props.get("ssl.keystore.location"), props.get("ssl.keystore.type", "JKS").upper()
    key_password = props.get("ssl.key.password")
    if props.get("ssl.keystore.certificate.chain"):
        if not props.get("ssl.keystore.key"):
            raise BadInputError(f"{where}: ssl.keystore.certificate.chain needs ssl.keystore.key (the PEM private key)")
        result.keystore = Store("PEM", text=props["ssl.keystore.certificate.chain"], key=props["ssl.keystore.key"])
    elif not location:
        return
    elif kind == "PEM":
        result.values.update(ssl_certfile=location, ssl_keyfile=location)
    elif kind == "PKCS12":
        result.keystore = Store("PKCS12", location, props.get("ssl.keystore.password") or key_password)
    elif kind == "JKS":
        raise BadInputError(
            f"{where}: ssl.keystore.location {location} is a JKS keystore, which offset-restore cannot read: "
            f"convert it once with keytool -importkeystore -srckeystore {location} -srcstoretype JKS "
            f"-destkeystore client.p12 -deststoretype PKCS12, then set ssl.keystore.type=PKCS12 and "
            "ssl.keystore.location=client.p12 (kafka-consumer-groups reads that file too)"
        )
    else:
        raise BadInputError(f"{where}: ssl.keystore.type {kind} is not supported (PEM, PKCS12; JKS after keytool)")
    if key_password and (result.keystore is None or result.keystore.kind == "PEM"):
        result.values["ssl_password"] = key_password  # the PEM key stays as it is: encrypted, if it is


def _trust(props: dict[str, str], result: ClientProperties, where: str) -> None:
    """A PEM truststore is the CA file; a PKCS12 one (or PEM given inline) becomes one; a JKS one (what
    MSK's guides copy from the JVM's ``cacerts``) cannot be read here: the system's CA certificates are
    used — MSK's brokers present certificates of Amazon's public CA — and a private CA needs a PEM or
    PKCS12 truststore, or ``--ssl-cafile``."""
    if props.get("ssl.truststore.certificates"):
        result.truststore = Store("PEM", text=props["ssl.truststore.certificates"])
        return
    location = props.get("ssl.truststore.location")
    if not location:
        return
    kind = props.get("ssl.truststore.type", "JKS").upper()
    if kind == "PEM":
        result.values["ssl_cafile"] = location
        return
    if kind == "PKCS12":
        result.truststore = Store("PKCS12", location, props.get("ssl.truststore.password"))
        return
    result.warnings.append(
        f"ssl.truststore.location {location} ({kind}) is not read: the system's CA certificates are used "
        "(enough for MSK); for a private CA give a PEM or PKCS12 truststore, or --ssl-cafile PEM_FILE "
        f"(keytool -exportcert -rfc -keystore {location} -alias ALIAS > ca.pem)"
    )


_IAM_OPTIONS = {
    "awsProfileName": "profile",
    "awsRoleArn": "role_arn",
    "awsRoleSessionName": "role_session_name",
    "awsRoleExternalId": "role_external_id",
    "awsStsRegion": "sts_region",
    "awsMaxRetries": "max_retries",
    "awsMaxBackOffTimeMs": "max_backoff_ms",
    "awsDebugCreds": "debug_creds",
}
"""aws-msk-iam-auth's ``IAMLoginModule`` options (its ``MSKCredentialProvider``) this client honours,
by the ``MskIamIdentity`` field each sets."""
_IAM_REFUSED = {
    "awsRoleAccessKeyId": "keys written in client.properties; put them in a profile of the AWS credentials "
    "file and name it with awsProfileName (with role_arn and source_profile there to assume a role)",
    "awsRoleSecretAccessKey": "keys written in client.properties; put them in a profile of the AWS credentials "
    "file and name it with awsProfileName",
    "awsRoleSessionToken": "keys written in client.properties; put them in a profile of the AWS credentials "
    "file and name it with awsProfileName",
    "awsShouldUseFips": "set AWS_USE_FIPS_ENDPOINT=true instead (botocore then calls STS's FIPS endpoint)",
    "awsMskRegionProvider": "it names a Java class; the token is signed for the broker host's region (or AWS_REGION)",
}
"""The options refused, with what to do instead. A no-op value (``awsShouldUseFips=false``) is accepted."""
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+")
_SESSION_NAME = re.compile(r"[\w+=,.@-]{2,64}")
_AWS_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d|aws-global")


def msk_iam_identity(options: dict[str, str], where: str) -> MskIamIdentity | None:
    """The identity ``IAMLoginModule``'s options name, or None for the default credentials; every
    option is used as aws-msk-iam-auth uses it or refused by name (exit 2), none is ignored.

    Two differences from the Java library, both refusals where it would act as an identity the file
    does not say: it falls back to the default credentials when the named profile or role gives none
    (``awsAddDefaultProviders``, true by default): here that is an error, and ``awsAddDefaultProviders``
    is accepted only as ``false``; and with both ``awsProfileName`` and ``awsRoleArn`` it signs with the
    profile and assumes the role only if the profile has no credentials: here that pair is refused."""
    _refuse_unusable(options, where)
    fields: dict[str, Any] = {_IAM_OPTIONS[name]: value for name, value in options.items() if name in _IAM_OPTIONS}
    if not fields:
        return None
    if fields.get("profile") and fields.get("role_arn"):
        raise BadInputError(
            f"{where}: awsProfileName and awsRoleArn together are not supported: aws-msk-iam-auth signs with the "
            "profile and assumes the role only when the profile has no credentials; keep one (to assume the role "
            "with the profile's credentials, give the profile role_arn and source_profile in the AWS config file)"
        )
    role_only = [name for name in ("awsRoleSessionName", "awsRoleExternalId") if name in options]
    if role_only and not fields.get("role_arn"):
        raise BadInputError(f"{where}: {role_only[0]} needs awsRoleArn (the role it is for)")
    if "sts_region" in fields and not (fields.get("role_arn") or _flag(options, "awsDebugCreds", where)):
        raise BadInputError(f"{where}: awsStsRegion needs awsRoleArn (or awsDebugCreds): nothing else calls STS")
    _check_values(options, where)
    fields["debug_creds"] = _flag(options, "awsDebugCreds", where)
    for name in ("awsMaxRetries", "awsMaxBackOffTimeMs"):
        if name in options:
            fields[_IAM_OPTIONS[name]] = _whole_number(options, name, where)
    try:
        return MskIamIdentity(**fields)
    except ValidationError as error:  # a number out of range
        problem = error.errors()[0]
        option = next(name for name, known in _IAM_OPTIONS.items() if known == problem["loc"][0])
        raise BadInputError(f"{where}: {option} {options[option]!r}: {problem['msg'].lower()}") from None


def _refuse_unusable(options: dict[str, str], where: str) -> None:
    """What aws-msk-iam-auth reads that this client does not, and what it does not know (most likely a
    misspelt option: the Java library would ignore it and sign as the default identity)."""
    for name, value in options.items():
        if name in _IAM_OPTIONS:
            continue
        if name == "awsAddDefaultProviders" and value.lower() == "false":
            continue  # what this client always does: no fallback to the default credentials
        if name == "awsShouldUseFips" and value.lower() == "false":
            continue
        if name == "awsAddDefaultProviders":
            raise BadInputError(
                f"{where}: awsAddDefaultProviders={value} is not supported: offset-restore never falls back to "
                "the default credentials when the named profile or role gives none (awsAddDefaultProviders=false)"
            )
        if name in _IAM_REFUSED:
            raise BadInputError(f"{where}: {name} is not supported: {_IAM_REFUSED[name]}")
        raise BadInputError(
            f"{where}: {name} is not an option of IAMLoginModule (it takes {', '.join(_IAM_OPTIONS)}, "
            "awsAddDefaultProviders=false)"
        )


def _check_values(options: dict[str, str], where: str) -> None:
    checks = (
        ("awsRoleArn", _ROLE_ARN, "an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)"),
        ("awsRoleSessionName", _SESSION_NAME, "2 to 64 of letters, digits and +=,.@_-"),
        ("awsStsRegion", _AWS_REGION, "an AWS region such as eu-central-1"),
    )
    for name, pattern, what in checks:
        if name in options and not pattern.fullmatch(options[name]):
            raise BadInputError(f"{where}: {name} {options[name]!r} is not {what}")
    if "awsProfileName" in options and not options["awsProfileName"].strip():
        raise BadInputError(f"{where}: awsProfileName is empty")


def _flag(options: dict[str, str], name: str, where: str) -> bool:
    value = options.get(name, "false").lower()
    if value not in ("true", "false"):
        raise BadInputError(f"{where}: {name} takes true or false, not {options[name]!r}")
    return value == "true"


def _whole_number(options: dict[str, str], name: str, where: str) -> int:
    if not options[name].isdigit():
        raise BadInputError(f"{where}: {name} takes a whole number, not {options[name]!r}")
    return int(options[name])
