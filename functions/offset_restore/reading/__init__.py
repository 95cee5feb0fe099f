"""Every record read and what it costs, between the stages that read (``snapshot``, ``translate``,
``apply``'s anchors and verification) and the package that talks to Kafka (``kafka``): the fetch-round
rules (``rounds``), what one plan's reads learned of each partition (``learned``), the answers a read
already holds (``held``) and partitions read whole (``whole``). Pure: the fetch is injected."""
