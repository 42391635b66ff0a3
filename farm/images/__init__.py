"""Images: recipes, Debian package fetch/extract, the reproducible initrd, build cache and manifest."""
