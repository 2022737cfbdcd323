"""Migrations of the ORM suite's app compat_shop (0001_initial: made by makemigrations)."""
