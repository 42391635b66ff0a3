"""farm: a rack of embedded boards (and their QEMU twins) as a CI/CD and benchmarking service."""

__version__ = "0.1.0"
