"""Every record read and what it costs, between the stages that read (``snapshot``, ``translate``,
``apply``'s anchors and verification) and the package that talks to Kafka (``kafka``): the fetch-round
rules (``rounds``) and the answers a read already holds (``held``). Pure: the fetch is injected."""
