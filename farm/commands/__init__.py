"""The farm sub-commands, one module per group of verbs. Each module has ``register(subparsers)``,
which adds its verbs with their help and sets ``func`` to a small function that calls into farm's
modules and returns an exit code. No logic lives here beyond turning arguments into calls."""
