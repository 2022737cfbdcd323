"""Reads on one connection after writes acknowledged on another (what applications with
connection pools do): connection A inserts a row (autocommit), connection B, of the same user,
selects it at once. Prints how many of the reads missed their row, per consistency level.

    python cross_connection_reads.py --port P [--rounds 10000] [--level global] [--level session]
"""
import argparse
import sys

import pymysql


def connect(args):
    return pymysql.connect(host=args.host, port=args.port, user=args.user, password=args.password,
                           database="demo", autocommit=True)


def run(args, level):
    writer, reader = connect(args), connect(args)
    table = f"probe_xconn_{level}"
    with writer.cursor() as w:
        w.execute(f"DROP TABLE IF EXISTS {table}")
        w.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    with reader.cursor() as r:
        if level != "default":
            r.execute(f"SET tessera_read_consistency = '{level}'")
    missed = 0
    with writer.cursor() as w, reader.cursor() as r:
        for i in range(args.rounds):
            w.execute(f"INSERT INTO {table} VALUES ({i})")
            r.execute(f"SELECT id FROM {table} WHERE id = {i}")
            missed += r.fetchone() is None
        w.execute(f"DROP TABLE {table}")
    writer.close()
    reader.close()
    return missed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--user", default="app")
    p.add_argument("--password", default="app")
    p.add_argument("--rounds", type=int, default=10000)
    p.add_argument("--level", action="append", help="default (the user's), global, session, eventual")
    args = p.parse_args()
    failed = False
    for level in args.level or ["default"]:
        missed = run(args, level)
        print(f"level={level} rounds={args.rounds} missed={missed}")
        failed |= level in ("default", "global") and missed > 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
