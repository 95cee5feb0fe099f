"""Per-environment settings from ``cdk.json`` context (``environments.<name>``), validated up front
so that a typo fails the synth with the field named, not a deploy.

Beyond the fields' shapes, what cannot work once deployed is refused here too (docs/deploy.md):
brokers only reachable inside a VPC for a function outside any, an auth mode MSK does not serve on
the port given, a cluster ARN and broker hosts in different regions, a VPC of another region."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Literal

from offset_restore.kafka.msk_iam import msk_arn_region, msk_host_region
from offset_restore.workflow.environment import ClusterVariables
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

__all__ = ["MSK_PORTS", "MSK_PUBLIC_PORTS", "ClusterConfig", "EnvironmentConfig", "NetworkConfig"]

_MSK_ARN = re.compile(r"arn:aws[a-z-]*:kafka:[a-z0-9-]+:\d{12}:cluster/[^/]+/[^/]+")
Auth = Literal["iam", "scram", "tls", "plaintext"]
MSK_PORTS: dict[int, Auth] = {9098: "iam", 9096: "scram", 9094: "tls", 9092: "plaintext"}
"""The port an MSK broker serves each client authentication on, inside its VPC."""
MSK_PUBLIC_PORTS: dict[int, Auth] = {9198: "iam", 9196: "scram", 9194: "tls"}
"""The same on the public endpoints (``b-N-public.…``) of a cluster with public access turned on."""
_PRIVATE = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]


def _host_port(server: str) -> tuple[str, int | None]:
    host, _, port = server.strip().rpartition(":")
    return (host, int(port)) if port.isdigit() else (server.strip(), None)


def _is_private(host: str) -> bool:
    """An address only a VPC (or a network peered with it) reaches: RFC 1918, or an MSK broker name."""
    if msk_host_region(host):  # MSK broker names resolve to the cluster's private addresses
        return not _is_msk_public(host)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in network for network in _PRIVATE)


def _is_msk_public(host: str) -> bool:
    return host.split(".", 1)[0].endswith("-public")


def _refuse_endpoints_without_routes(vpc_id: str | None, create: bool, route_table_ids: Sequence[str]) -> None:
    if create and not route_table_ids:
        raise ValueError(
            f"network {vpc_id}: createVpcEndpoints needs routeTableIds (the route tables of its subnets, "
            "where the S3 and DynamoDB gateway endpoints are routes)"
        )


class NetworkConfig(BaseModel):
    """Where a cluster's functions run: its VPC's subnets and security groups (the groups must allow
    egress to the brokers' port and HTTPS to the endpoints below), and whether this stack creates the
    VPC endpoints those functions need (S3 and DynamoDB gateways, Secrets Manager for SCRAM)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    vpc_id: str = Field(alias="vpcId", pattern=r"^vpc-[0-9a-f]+$")
    availability_zones: tuple[str, ...] = Field(alias="availabilityZones", min_length=1)
    subnet_ids: tuple[str, ...] = Field(alias="subnetIds", min_length=1)
    security_group_ids: tuple[str, ...] = Field(alias="securityGroupIds", min_length=1)
    route_table_ids: tuple[str, ...] = Field(default=(), alias="routeTableIds")
    """The route tables of ``subnetIds``: a gateway endpoint is a route in them."""
    create_vpc_endpoints: bool = Field(default=False, alias="createVpcEndpoints")

    @model_validator(mode="after")
    def _endpoints_have_route_tables(self) -> NetworkConfig:
        _refuse_endpoints_without_routes(self.vpc_id, self.create_vpc_endpoints, self.route_table_ids)
        return self

    def outside(self, region: str) -> list[str]:
        """The availability zones of this network that are not in ``region``."""
        return [zone for zone in self.availability_zones if not zone.startswith(region)]


class ClusterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    bootstrap_servers: str = Field(alias="bootstrapServers", min_length=1)
    arn: str | None = None
    """The MSK cluster ARN: IAM permissions are scoped to it, its topics and its groups."""
    auth: Auth = "iam"
    scram_secret_arn: str | None = Field(default=None, alias="scramSecretArn")
    scram_secret_key_arn: str | None = Field(
        default=None, alias="scramSecretKeyArn", pattern=r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]+$"
    )
    """The customer-managed KMS key of the SCRAM secret (MSK accepts no other): the functions may decrypt
    with it; without it, the key's own policy must allow their roles."""
    tls_secret_arn: str | None = Field(default=None, alias="tlsSecretArn")
    """Mutual TLS (auth ``tls``, MSK's port 9094 with client authentication): a Secrets Manager secret
    ``{"certificate": PEM chain, "private_key": PEM, "ca": PEM (optional)}`` the functions present."""
    tls_secret_key_arn: str | None = Field(
        default=None, alias="tlsSecretKeyArn", pattern=r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]+$"
    )
    """That secret's customer-managed KMS key, if it has one (decrypt through Secrets Manager only)."""
    network: NetworkConfig | None = None
    """The VPC of the functions that talk to this cluster; the environment's vpcId/... if not set."""
    unfenced: bool = False
    """Write group offsets without the cluster's fence: only for a cluster that does not apply transactional
    offset commits (refused by name otherwise), and only where no other writer can run (docs/deploy.md)."""

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
        if self.tls_secret_arn and self.auth != "tls":
            raise ValueError(
                f"cluster {self.name}: 'tlsSecretArn' (a client certificate) is for auth 'tls' (MSK's port 9094), "
                f"not '{self.auth}'"
            )
        return self

    @property
    def has_secret(self) -> bool:
        """Whether the functions read a secret of this cluster (SCRAM credentials, a client certificate)."""
        return bool(self.scram_secret_arn or self.tls_secret_arn)

    @property
    def hosts(self) -> list[str]:
        return [_host_port(server)[0] for server in self.bootstrap_servers.split(",")]

    @property
    def is_private(self) -> bool:
        return any(_is_private(host) for host in self.hosts)

    @model_validator(mode="after")
    def _port_serves_auth(self) -> ClusterConfig:
        """MSK serves each authentication on its own port: another auth on it fails only at the handshake."""
        if not (self.arn or any(msk_host_region(host) for host in self.hosts)):
            return self  # not MSK: a self-managed broker may serve any auth on any port
        for server in self.bootstrap_servers.split(","):
            host, port = _host_port(server)
            ports = MSK_PUBLIC_PORTS if _is_msk_public(host) else MSK_PORTS
            if port in ports and ports[port] != self.auth:
                right = [p for p, auth in ports.items() if auth == self.auth]
                fix = f"use port {right[0]} for '{self.auth}'" if right else f"'{self.auth}' has no port there"
                raise ValueError(
                    f"cluster {self.name}: MSK serves auth '{ports[port]}' on port {port}, not '{self.auth}': "
                    f"set auth '{ports[port]}', or {fix}"
                )
        return self

    @model_validator(mode="after")
    def _arn_and_hosts_agree(self) -> ClusterConfig:
        arn_region = msk_arn_region(self.arn)
        for host in self.hosts:
            host_region = msk_host_region(host)
            if arn_region and host_region and host_region != arn_region:
                raise ValueError(
                    f"cluster {self.name}: broker {host} is in {host_region} but the arn names {arn_region}: "
                    "the arn and bootstrapServers must be of the same cluster"
                )
        return self

    def resource_arns(self, kind: Literal["topic", "group", "transactional-id"], names: str = "*") -> list[str]:
        """``arn:...:topic/NAME/UUID/*`` (or ``group``, ``transactional-id``; ``names`` instead of ``*``)
        for this cluster."""
        assert self.arn is not None
        return [self.arn.replace(":cluster/", f":{kind}/", 1) + f"/{names}"]

    def environment(self, names: ClusterVariables) -> dict[str, str]:
        """The variables ``offset_restore.workflow.settings`` reads for this cluster, under ``names``
        (``workflow.environment.SOURCE`` or ``TARGET``)."""
        protocol, mechanism = {
            "iam": ("SASL_SSL", "AWS_MSK_IAM"),
            "scram": ("SASL_SSL", "SCRAM-SHA-512"),
            "tls": ("SSL", "NONE"),
            "plaintext": ("PLAINTEXT", "NONE"),
        }[self.auth]
        variables = {
            names.name: self.name,
            names.bootstrap_servers: self.bootstrap_servers,
            names.security_protocol: protocol,
            names.sasl_mechanism: mechanism,
        }
        if self.scram_secret_arn:
            variables[names.sasl_secret_arn] = self.scram_secret_arn
        if self.tls_secret_arn:
            variables[names.tls_secret_arn] = self.tls_secret_arn
        if self.unfenced:
            variables[names.unfenced] = "true"
        return variables


DEFAULT_RPO_MINUTES = 120
"""The snapshot-age alarm's window when there is no schedule to follow."""

_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_UNIT_MINUTES = {"minute": 1, "hour": 60, "day": 1440}


def schedule_interval_minutes(expression: str) -> int | None:
    """The longest time between two runs of an EventBridge schedule, in minutes: ``rate(N unit)``, or a
    ``cron(...)`` whose minutes and hours are fixed values, lists or steps (``0/15``, ``*/5``, ``0,30``)
    and whose days are every day (``*`` or ``?``); None for any other (weekly, monthly, ranges)."""
    rate = _RATE.fullmatch(expression.strip())
    if rate:
        return int(rate.group(1)) * _UNIT_MINUTES[rate.group(2).rstrip("s")]
    if not (expression.startswith("cron(") and expression.endswith(")")):
        return None
    fields = expression[5:-1].split()
    if len(fields) != 6 or any(f not in ("*", "?") for f in fields[2:5]):
        return None
    minutes, hours = _values(fields[0], 60), _values(fields[1], 24)
    if not minutes or not hours:
        return None
    times = sorted(h * 60 + m for h in hours for m in minutes)
    return max((b - a) % 1440 or 1440 for a, b in zip(times, [*times[1:], times[0]], strict=True))


def _values(field: str, size: int) -> list[int] | None:
    """The values a cron field takes: ``*``, ``N``, ``A,B,...``, ``*/N``, ``A/N``; None for the rest."""
    if field == "*":
        return list(range(size))
    step = re.fullmatch(r"(\*|\d+)/(\d+)", field)
    if step:
        start, by = 0 if step.group(1) == "*" else int(step.group(1)), int(step.group(2))
        return list(range(start, size, by)) if by > 0 and start < size else None
    if re.fullmatch(r"\d+(,\d+)*", field):
        values = sorted({int(v) for v in field.split(",")})
        return values if values[-1] < size else None
    return None


class EnvironmentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    account: str = Field(pattern=r"^\d{12}$")
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    source: ClusterConfig
    target: ClusterConfig
    vpc_id: str | None = Field(default=None, alias="vpcId", pattern=r"^vpc-[0-9a-f]+$")
    availability_zones: list[str] = Field(default_factory=list, alias="availabilityZones")
    subnet_ids: list[str] = Field(default_factory=list, alias="subnetIds")
    security_group_ids: list[str] = Field(default_factory=list, alias="securityGroupIds")
    route_table_ids: list[str] = Field(default_factory=list, alias="routeTableIds")
    create_vpc_endpoints: bool = Field(default=False, alias="createVpcEndpoints")
    """vpcId ... createVpcEndpoints: the network of a cluster that sets none of its own (see NetworkConfig)."""
    snapshot_schedule: str | None = Field(default="rate(1 hour)", alias="snapshotSchedule")
    """``"none"`` for no scheduled snapshots: a JSON null never arrives (the CDK drops null context values,
    so null would mean the hourly default)."""
    snapshot_retention_days: int = Field(default=90, ge=1, alias="snapshotRetentionDays")
    snapshot_max_age_minutes: int | None = Field(default=None, ge=1, alias="snapshotMaxAgeMinutes")
    """The recovery point objective: an alarm fires when the newest snapshot is older. Default: two
    intervals of ``snapshotSchedule`` (``rpo_minutes``)."""
    execution_timeout_minutes: int = Field(default=720, ge=5, le=525_600, alias="executionTimeoutMinutes")
    """A run that has not ended by then times out (the timed-out alarm, and its lock released)."""
    log_retention_days: int = Field(default=30, alias="logRetentionDays")
    failover_alarm_names: list[str] = Field(default_factory=list, alias="failoverAlarmNames")
    """CloudWatch alarms whose ALARM state starts a run (a failover)."""
    failover_mode: Literal["plan", "apply"] = Field(default="plan", alias="failoverMode")
    """What an alarm-triggered run does: only plan (default), or plan and commit."""
    approval: Literal["never", "alarm", "always"] = Field(default="never", alias="approval")
    """Which runs wait for a person's approval after their plan and before they write: none, those the
    failover alarm starts, or every apply and migrate (docs/aws.md "The approval gate")."""
    approval_timeout_minutes: int = Field(default=60, ge=1, le=10_080, alias="approvalTimeoutMinutes")
    """How long the gate waits for an answer; then the run ends with nothing written and its lock released."""
    drill_schedule: str | None = Field(default=None, alias="drillSchedule")
    """A schedule for plan-only runs that report what a failover would do now."""
    notification_emails: list[str] = Field(default_factory=list, alias="notificationEmails")
    wait_timeout_seconds: int = Field(default=900, ge=0, alias="waitTimeoutSeconds")

    @field_validator("snapshot_schedule", "drill_schedule")
    @classmethod
    def _none_is_no_schedule(cls, value: str | None) -> str | None:
        return None if value is None or value.strip().lower() in ("", "none") else value

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
    def _gate_ends_before_the_run(self) -> EnvironmentConfig:
        """A gate that outlasts the execution would end the run as timed out, not as not approved."""
        if self.approval != "never" and self.approval_timeout_minutes >= self.execution_timeout_minutes:
            raise ValueError(
                f"approvalTimeoutMinutes ({self.approval_timeout_minutes}) must be below executionTimeoutMinutes "
                f"({self.execution_timeout_minutes}): the run would time out while its gate waits"
            )
        return self

    @model_validator(mode="after")
    def _rpo_is_known(self) -> EnvironmentConfig:
        self.rpo_minutes()  # a schedule of unknown interval without snapshotMaxAgeMinutes is refused here
        return self

    @model_validator(mode="after")
    def _network_is_complete(self) -> EnvironmentConfig:
        if self.vpc_id and not (self.subnet_ids and self.security_group_ids and self.availability_zones):
            raise ValueError("vpcId needs subnetIds, securityGroupIds and availabilityZones")
        _refuse_endpoints_without_routes(self.vpc_id, self.create_vpc_endpoints, self.route_table_ids)
        return self

    @model_validator(mode="after")
    def _clusters_are_reachable(self) -> EnvironmentConfig:
        """A function outside any VPC reaches no private broker: it would hang until its timeout."""
        for cluster in (self.source, self.target):
            network = self.network_for(cluster)
            if network is None and cluster.is_private:
                raise ValueError(
                    f"cluster {cluster.name}: its brokers ({cluster.bootstrap_servers}) are only reachable in a VPC; "
                    f"put the functions in the cluster's VPC: set network (vpcId, subnetIds, securityGroupIds) "
                    f"for cluster {cluster.name}"
                )
            if network is not None and (zones := network.outside(self.region)):
                raise ValueError(
                    f"cluster {cluster.name}: network {network.vpc_id} (zones {', '.join(zones)}) is not in the "
                    f"stack's region {self.region}; a VPC is used only in its own region: give a VPC in "
                    f"{self.region} peered with the cluster's"
                )
        return self

    def rpo_minutes(self) -> int:
        """``snapshotMaxAgeMinutes``, or two snapshot intervals: one missed snapshot is tolerated, the second
        pages; a schedule of unknown interval needs the option (refused at synth, with its name)."""
        if self.snapshot_max_age_minutes is not None:
            return self.snapshot_max_age_minutes
        if self.snapshot_schedule is None:
            return DEFAULT_RPO_MINUTES
        interval = schedule_interval_minutes(self.snapshot_schedule)
        if interval is None:
            raise ValueError(
                f"snapshotSchedule {self.snapshot_schedule!r}: its interval is not known here; set "
                "snapshotMaxAgeMinutes (the recovery point objective the snapshot-age alarm watches)"
            )
        return 2 * interval

    def default_network(self) -> NetworkConfig | None:
        """The environment-level vpcId/subnetIds/... (the network of both clusters before per-cluster ones)."""
        if not self.vpc_id:
            return None
        fields = ("vpc_id", "availability_zones", "subnet_ids", "security_group_ids", "route_table_ids")
        return NetworkConfig.model_validate(
            {**{name: getattr(self, name) for name in fields}, "create_vpc_endpoints": self.create_vpc_endpoints}
        )

    def network_for(self, cluster: ClusterConfig) -> NetworkConfig | None:
        """The network of the functions that talk to ``cluster``: its own, else the environment's."""
        return cluster.network or self.default_network()
