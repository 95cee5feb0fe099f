"""offset-restore: carry Kafka consumer groups to the right offsets on a new cluster."""

__version__ = "0.1.0"
