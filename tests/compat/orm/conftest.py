"""Shared setup of the ORM suite: the target (Tessera's main environment, or MariaDB itself with
COMPAT_DIRECT=1, as user app) and the suite's own database compat_orm, created afresh once per
run. Django is configured here (settings.py) before any test module imports a model."""

import os

import django
import pymysql

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")

DB = "compat_orm"
HOST = os.environ.get("TESSERA_HOST", "127.0.0.1")


def env(var):
    value = os.environ.get(var)
    if not value:
        raise RuntimeError(f"environment variable {var} is not set (run through run.sh)")
    return value


PORT = int(env("TESSERA_PORT"))
USER = os.environ.get("TESSERA_USER", "app")
PASSWORD = os.environ.get("TESSERA_PASSWORD", "app")


def pymysql_connect(**kw):
    return pymysql.connect(host=HOST, port=PORT, user=USER, password=PASSWORD, autocommit=True,
                           charset="utf8mb4", connect_timeout=20, read_timeout=60, **kw)


def pytest_sessionstart(session):
    """compat_orm is dropped and created before anything connects to it (Django included)."""
    conn = pymysql_connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DB}")
            cur.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    finally:
        conn.close()
    django.setup()
