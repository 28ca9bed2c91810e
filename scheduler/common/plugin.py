"""What every filter and weigher is: a class built with the configuration
and listed by operators under its class name (``[filter_scheduler]
enabled_filters``, ``weight_classes``, a policy's units)."""

from oslo_config import cfg


class ConfiguredPlugin:
    """The shape ``BaseHostFilter`` and ``BaseHostWeigher`` share."""

    def __init__(self, conf: cfg.ConfigOpts):
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__

    def applies(self, spec: object) -> bool:
        """False when ``spec`` gives this plugin nothing to do: the
        scheduler then skips it for every host."""
        return True

    @classmethod
    def _overrides(cls, base: type, method: str) -> bool:
        """Whether this class writes ``method`` itself rather than
        inheriting ``base``'s."""
        return getattr(cls, method) is not getattr(base, method)

    @classmethod
    def _writer_of(cls, method: str) -> type:
        """The class of this one's ancestry (itself included) whose
        ``method`` it has."""
        return next(klass for klass in cls.__mro__ if method in vars(klass))
