"""Networks: the VPC, subnets and security groups of the functions that talk to a cluster, and the VPC
endpoints those functions need when the environment asks this stack to create them.

A function in a VPC has no route to AWS APIs unless the VPC gives it one (a NAT gateway or
endpoints); without it a call to S3 waits until the function's 900 s timeout. What the Kafka
functions (Snapshot, Translate, CheckEmpty, Commit) call besides their brokers, and so what is
created per VPC with ``createVpcEndpoints``:

- S3 (gateway endpoint): snapshots, work items and reports are objects in the deployment's bucket.
- DynamoDB (gateway endpoint): Translate, CheckEmpty and Commit read and write the table.
- Secrets Manager (interface endpoint, private DNS): only when a cluster reached from the VPC uses
  SCRAM, whose password the function reads at start.

And what is not created, on purpose:

- CloudWatch Logs, X-Ray: the Lambda service ships a function's logs and traces itself, not through
  the function's network interfaces.
- KMS: the bucket and table call KMS for their encryption, not the function.
- STS: a function's credentials come from its execution environment; MSK IAM tokens are signed
  locally (offset_restore/kafka/msk_iam.py).
- SNS, Step Functions: only Report (publishes the outcome) and the state machine use them, outside
  any VPC.

Gateway endpoints reach only buckets and tables of the VPC's own region, which is the stack's: a
network must be in the stack's region (infra/config.py refuses another one).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2

from infra.config import ClusterConfig, EnvironmentConfig, NetworkConfig

__all__ = ["Networks"]


class Networks:
    """The imported VPC pieces, one set per distinct network, on the stack's scope (imports create no
    resource, so their construct ids change no logical id)."""

    def __init__(self, stack: Stack, config: EnvironmentConfig) -> None:
        self.stack, self.config = stack, config
        self._imported: dict[NetworkConfig, dict[str, object]] = {}

    def function_options(self, cluster: ClusterConfig) -> dict[str, object]:
        """``vpc``, ``vpc_subnets`` and ``security_groups`` of a function talking to ``cluster``; none
        outside any VPC."""
        network = self.config.network_for(cluster)
        if network is None:
            return {}
        if network not in self._imported:
            self._imported[network] = self._import(network, f"Net{len(self._imported)}" if self._imported else "")
        return self._imported[network]

    def _import(self, network: NetworkConfig, prefix: str) -> dict[str, object]:
        # The first network keeps the ids the single environment-wide network had.
        vpc = ec2.Vpc.from_vpc_attributes(
            self.stack,
            f"{prefix}Vpc",
            vpc_id=network.vpc_id,
            availability_zones=list(network.availability_zones),
            private_subnet_ids=list(network.subnet_ids),
        )
        subnets = [
            ec2.Subnet.from_subnet_id(self.stack, f"{prefix}Subnet{i}", s) for i, s in enumerate(network.subnet_ids)
        ]
        groups = [
            ec2.SecurityGroup.from_security_group_id(self.stack, f"{prefix}Sg{i}", g)
            for i, g in enumerate(network.security_group_ids)
        ]
        return {"vpc": vpc, "vpc_subnets": ec2.SubnetSelection(subnets=subnets), "security_groups": groups}

    def add_endpoints(self) -> dict[str, list[str]]:
        """The endpoints of every VPC whose network sets ``createVpcEndpoints``; returns, per VPC id, the
        services given an endpoint (for tests and the reader)."""
        by_vpc: dict[str, list[tuple[NetworkConfig, ClusterConfig]]] = {}
        for cluster in (self.config.source, self.config.target):
            network = self.config.network_for(cluster)
            if network is not None and network.create_vpc_endpoints:
                by_vpc.setdefault(network.vpc_id, []).append((network, cluster))
        return {vpc_id: self._endpoints(vpc_id, users) for vpc_id, users in by_vpc.items()}

    def _endpoints(self, vpc_id: str, users: list[tuple[NetworkConfig, ClusterConfig]]) -> list[str]:
        """One endpoint per service and VPC: a route table holds one route per gateway service, and an
        interface endpoint's private DNS name serves the whole VPC."""
        suffix, region = vpc_id.removeprefix("vpc-"), self.config.region
        route_tables = sorted({table for network, _ in users for table in network.route_table_ids})
        created = []
        for service in ("s3", "dynamodb"):
            ec2.CfnVPCEndpoint(
                self.stack,
                f"{service.capitalize()}Endpoint{suffix}",
                vpc_id=vpc_id,
                service_name=f"com.amazonaws.{region}.{service}",
                vpc_endpoint_type="Gateway",
                route_table_ids=route_tables,
            )
            created.append(service)
        if any(cluster.has_secret for _, cluster in users):
            self._secrets_manager(vpc_id, suffix, users)
            created.append("secretsmanager")
        return created

    def _secrets_manager(self, vpc_id: str, suffix: str, users: list[tuple[NetworkConfig, ClusterConfig]]) -> None:
        """An interface endpoint in the subnets of the network of a cluster with a secret (SCRAM credentials,
        a client certificate; one subnet per zone), reachable on 443 from every security group of the
        functions in this VPC (its private DNS name serves them all)."""
        sources = sorted({group for network, _ in users for group in network.security_group_ids})
        group = ec2.CfnSecurityGroup(
            self.stack,
            f"SecretsEndpointSg{suffix}",
            vpc_id=vpc_id,
            group_description="offset-restore: HTTPS to the Secrets Manager endpoint from the Kafka functions",
            security_group_ingress=[
                ec2.CfnSecurityGroup.IngressProperty(
                    ip_protocol="tcp",
                    from_port=443,
                    to_port=443,
                    source_security_group_id=source,
                    description="the Kafka functions read their cluster's secret",
                )
                for source in sources
            ],
        )
        ec2.CfnVPCEndpoint(
            self.stack,
            f"SecretsmanagerEndpoint{suffix}",
            vpc_id=vpc_id,
            service_name=f"com.amazonaws.{self.config.region}.secretsmanager",
            vpc_endpoint_type="Interface",
            private_dns_enabled=True,
            subnet_ids=list(next(network for network, cluster in users if cluster.has_secret).subnet_ids),
            security_group_ids=[group.attr_group_id],
        )
