"""Per-environment settings from ``cdk.json`` context (``environments.<name>``), validated up front
so that a typo fails the synth with the field named, not a deploy."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

__all__ = ["ClusterConfig", "EnvironmentConfig"]

_MSK_ARN = re.compile(r"arn:aws[a-z-]*:kafka:[a-z0-9-]+:\d{12}:cluster/[^/]+/[^/]+")


class ClusterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    bootstrap_servers: str = Field(alias="bootstrapServers", min_length=1)
    arn: str | None = None
    """The MSK cluster ARN: IAM permissions are scoped to it, its topics and its groups."""
    auth: Literal["iam", "scram", "tls", "plaintext"] = "iam"
    scram_secret_arn: str | None = Field(default=None, alias="scramSecretArn")

    @field_validator("arn")
    @classmethod
    def _msk_arn(cls, value: str | None) -> str | None:
        if value is not None and not _MSK_ARN.fullmatch(value):
            raise ValueError(f"{value!r} is not an MSK cluster ARN (arn:aws:kafka:REGION:ACCOUNT:cluster/NAME/UUID)")
        return value

    @model_validator(mode="after")
    def _auth_is_complete(self) -> ClusterConfig:
        if self.auth == "iam" and not self.arn:
            raise ValueError(f"cluster {self.name}: auth 'iam' needs the cluster 'arn' to scope permissions")
        if self.auth == "scram" and not self.scram_secret_arn:
            raise ValueError(f"cluster {self.name}: auth 'scram' needs 'scramSecretArn'")
        return self

    def resource_arns(self, kind: Literal["topic", "group"]) -> list[str]:
        """``arn:...:topic/NAME/UUID/*`` (or ``group``) for this cluster."""
        assert self.arn is not None
        return [self.arn.replace(":cluster/", f":{kind}/", 1) + "/*"]

    def environment(self, prefix: str) -> dict[str, str]:
        """The variables ``offset_restore.workflow.settings`` reads for this cluster."""
        protocol, mechanism = {
            "iam": ("SASL_SSL", "AWS_MSK_IAM"),
            "scram": ("SASL_SSL", "SCRAM-SHA-512"),
            "tls": ("SSL", "NONE"),
            "plaintext": ("PLAINTEXT", "NONE"),
        }[self.auth]
        variables = {
            f"{prefix}_CLUSTER_NAME": self.name,
            f"{prefix}_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            f"{prefix}_SECURITY_PROTOCOL": protocol,
            f"{prefix}_SASL_MECHANISM": mechanism,
        }
        if self.scram_secret_arn:
            variables[f"{prefix}_SASL_SECRET_ARN"] = self.scram_secret_arn
        return variables


class EnvironmentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    account: str = Field(pattern=r"^\d{12}$")
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    source: ClusterConfig
    target: ClusterConfig
    vpc_id: str | None = Field(default=None, alias="vpcId")
    availability_zones: list[str] = Field(default_factory=list, alias="availabilityZones")
    subnet_ids: list[str] = Field(default_factory=list, alias="subnetIds")
    security_group_ids: list[str] = Field(default_factory=list, alias="securityGroupIds")
    snapshot_schedule: str | None = Field(default="rate(1 hour)", alias="snapshotSchedule")
    snapshot_retention_days: int = Field(default=90, ge=1, alias="snapshotRetentionDays")
    log_retention_days: int = Field(default=30, alias="logRetentionDays")
    failover_alarm_names: list[str] = Field(default_factory=list, alias="failoverAlarmNames")
    """CloudWatch alarms whose ALARM state starts a run (a failover)."""
    failover_mode: Literal["plan", "apply"] = Field(default="plan", alias="failoverMode")
    """What an alarm-triggered run does: only plan (default), or plan and commit."""
    drill_schedule: str | None = Field(default=None, alias="drillSchedule")
    """A schedule for plan-only runs that report what a failover would do now."""
    notification_emails: list[str] = Field(default_factory=list, alias="notificationEmails")
    wait_timeout_seconds: int = Field(default=900, ge=0, alias="waitTimeoutSeconds")

    @model_validator(mode="after")
    def _tls_outside_dev(self, info: ValidationInfo) -> EnvironmentConfig:
        """Plaintext Kafka (credentials and offsets readable on the wire) only in ``dev``."""
        name = (info.context or {}).get("name")
        for cluster in (self.source, self.target):
            if cluster.auth == "plaintext" and name != "dev":
                raise ValueError(
                    f"cluster {cluster.name} uses auth 'plaintext': TLS is required outside the dev environment "
                    "(use iam, scram or tls)"
                )
        return self

    @model_validator(mode="after")
    def _network_is_complete(self) -> EnvironmentConfig:
        if self.vpc_id and not (self.subnet_ids and self.security_group_ids and self.availability_zones):
            raise ValueError("vpcId needs subnetIds, securityGroupIds and availabilityZones")
        return self
