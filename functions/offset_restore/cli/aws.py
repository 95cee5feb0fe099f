"""What the operator's commands share to reach a deployment: ``--stack ENV`` (names read from the
stack's outputs), ``--region`` and ``--profile`` (one boto3 session for the whole command, so every
client of one run talks to one account and region), and every AWS error as one line that says what
to do — an operator in an incident reads ``no AWS credentials: ...``, not a 90-line traceback.
"""

from __future__ import annotations

import argparse
from typing import Any

from offset_restore.errors import BadInputError
from offset_restore.workflow.executions import stack_outputs

__all__ = ["add_deployment", "aws_client", "describe_aws_error", "from_stack"]

_CREDENTIALS_HINT = "give --profile NAME, set AWS_PROFILE, or run `aws sso login` / `aws configure`"


def add_deployment(parser: argparse.ArgumentParser, stack_help: str | None = None) -> None:
    """``--stack``, ``--region``, ``--profile`` for a command that talks to a deployment."""
    group = parser.add_argument_group("deployment")
    if stack_help is not None:
        group.add_argument("--stack", metavar="ENV", help=stack_help)
    group.add_argument(
        "--region", metavar="REGION", help="the deployment's AWS region (default: AWS_REGION or the profile's)"
    )
    group.add_argument("--profile", metavar="NAME", help="the AWS profile to use (default: AWS_PROFILE)")


def aws_client(args: argparse.Namespace, service: str) -> Any:
    """A client of ``service`` from this command's session (``--profile``, ``--region``); one session
    per command, so a run never mixes accounts or regions."""
    session = getattr(args, "_aws_session", None)
    if session is None:
        import boto3

        session = boto3.Session(profile_name=getattr(args, "profile", None), region_name=getattr(args, "region", None))
        args._aws_session = session
    return session.client(service)  # type: ignore[call-overload]


def from_stack(args: argparse.Namespace, wanted: dict[str, str]) -> None:
    """Fill the options ``wanted`` (option -> stack output) from ``--stack``; refuse a mix of both, or
    neither, by name."""
    given = [option for option in wanted if getattr(args, option) is not None]
    if args.stack is None:
        missing = [option for option in wanted if getattr(args, option) is None]
        if missing:
            names = " and ".join("--" + option.replace("_", "-") for option in missing)
            raise BadInputError(f"give --stack ENV, or {names}")
        return
    if given:
        raise BadInputError(f"--stack names the deployment: drop --{given[0].replace('_', '-')}")
    outputs = stack_outputs(aws_client(args, "cloudformation"), args.stack)
    for option, output in wanted.items():
        setattr(args, option, outputs[output])


def describe_aws_error(error: Exception) -> tuple[str, int] | None:
    """One line and an exit status for an error of boto3/botocore, or None when it is not one.

    Configuration that is missing (no region, no credentials, an unknown profile) is bad usage
    (exit 2); an endpoint that does not answer or a refused call is a failure (exit 1)."""
    from botocore import exceptions as aws

    if isinstance(error, aws.NoRegionError):
        return "no AWS region: give --region REGION (the deployment's), or set AWS_REGION", 2
    if isinstance(error, aws.ProfileNotFound):
        return f"{error}: give a profile of ~/.aws/config (aws configure list-profiles)", 2
    if isinstance(error, aws.NoCredentialsError | aws.PartialCredentialsError):
        return f"no AWS credentials: {_CREDENTIALS_HINT}", 2
    if isinstance(error, aws.TokenRetrievalError | aws.SSOTokenLoadError | aws.UnauthorizedSSOTokenError):
        return f"the AWS SSO session has expired: run `aws sso login` ({error})", 2
    if isinstance(error, aws.EndpointConnectionError | aws.ConnectTimeoutError | aws.ReadTimeoutError):
        return f"cannot reach AWS: {error}; check the network and --region", 1
    if isinstance(error, aws.ClientError):
        return _client_error(error), 1
    if isinstance(error, aws.BotoCoreError):
        return f"AWS: {error}", 1
    return None


def _client_error(error: Any) -> str:
    """A refused call: the operation, AWS's own code and message, and for the usual causes the fix."""
    details = error.response.get("Error", {})
    code, message = details.get("Code", "Error"), details.get("Message", "")
    line = f"AWS refused {error.operation_name}: {code}: {message}".rstrip(": ")
    if code in ("ExpiredToken", "ExpiredTokenException", "RequestExpired"):
        return f"{line} — the credentials have expired: {_CREDENTIALS_HINT}"
    if code in ("InvalidClientTokenId", "UnrecognizedClientException", "InvalidSignatureException"):
        return f"{line} — the credentials are not valid here: {_CREDENTIALS_HINT}"
    if code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"):
        return f"{line} — the identity lacks this permission (docs/deploy.md lists the operator's policy)"
    if code == "ResourceNotFoundException":
        return f"{line} — check --stack and --region: is the deployment in this region?"
    return line
