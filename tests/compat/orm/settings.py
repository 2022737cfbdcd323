"""Minimal Django settings of the ORM suite: the app compat_shop on the database compat_orm
through the MySQL backend (mysqlclient), reached at TESSERA_PORT (Tessera, or MariaDB directly).
The alias `other` is a second connection to the same database, for cross-connection checks."""

import os

_db = {
    "ENGINE": "django.db.backends.mysql",
    "NAME": "compat_orm",
    "HOST": os.environ.get("TESSERA_HOST", "127.0.0.1"),
    "PORT": os.environ.get("TESSERA_PORT", "3306"),
    "USER": os.environ.get("TESSERA_USER", "app"),
    "PASSWORD": os.environ.get("TESSERA_PASSWORD", "app"),
    "OPTIONS": {"charset": "utf8mb4", "connect_timeout": 20, "read_timeout": 60},
    "TEST": {"NAME": "compat_orm"},
}
DATABASES = {"default": _db, "other": dict(_db)}
INSTALLED_APPS = ["compat_shop"]
SECRET_KEY = "compat-orm-suite"  # noqa: S105 (nothing to protect: a test settings module)
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
