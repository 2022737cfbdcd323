"""Django ORM (MySQL backend on mysqlclient) on the database compat_orm: `migrate` applies the
app's migration (and `makemigrations --check` finds nothing new), CRUD with a foreign key,
transaction.atomic commit / rollback / nested savepoint, select_for_update (NOWAIT and SKIP
LOCKED from a second connection), bulk_create, aggregates, `inspectdb` names the tables.
The alias `other` (settings.py) is a second connection: what one commits, the other must read."""

import io

import pytest
from django.core.management import call_command
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Avg, Count, F, Max, ProtectedError, Q, Sum
from django.db.models.functions import Lower

from compat_shop.models import Customer, Order, Product

TABLES = ["compat_shop_customer", "compat_shop_product", "compat_shop_order"]


def command(*args, **kw):
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out, **kw)
    return out.getvalue()


@pytest.fixture(scope="module")
def migrated():
    command("migrate", verbosity=1, interactive=False)
    yield
    for alias in ("default", "other"):
        connections[alias].close()


@pytest.fixture(autouse=True)
def empty_tables(migrated):
    Order.objects.all().delete()
    Product.objects.all().delete()
    Customer.objects.all().delete()


def test_migrate_applied(migrated):
    conn = connections["default"]
    assert conn.mysql_is_mariadb and conn.mysql_version >= (10, 11), conn.mysql_server_info
    applied = MigrationRecorder(conn).applied_migrations()
    assert ("compat_shop", "0001_initial") in applied
    assert set(TABLES) <= set(conn.introspection.table_names())
    assert "[X] 0001_initial" in command("showmigrations", "compat_shop")
    # The models and the migration agree (exits non-zero when a migration is missing).
    command("makemigrations", "compat_shop", check=True, dry_run=True)
    # Run again: nothing left to apply.
    assert "No migrations to apply" in command("migrate", interactive=False)


def test_crud(migrated):
    c = Customer.objects.create(name="Ada", email="ada@example.org")
    assert Customer.objects.get(pk=c.pk).email == "ada@example.org"
    c.email = "ada@compat.test"
    c.save()
    assert Customer.objects.filter(name="Ada").values_list("email", flat=True).get() == "ada@compat.test"
    assert Customer.objects.filter(pk=c.pk).update(email=Lower(F("name"))) == 1
    c.refresh_from_db()
    assert c.email == "ada"
    p = Product.objects.create(sku="CRUD-1", price="9.99", stock=3)
    o = Order.objects.create(customer=c, product=p, quantity=2)
    assert list(c.orders.values_list("quantity", flat=True)) == [2]
    assert Order.objects.select_related("product").get(pk=o.pk).product.sku == "CRUD-1"
    with pytest.raises(ProtectedError):
        p.delete()
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            Customer.objects.create(name="Ada")
    c.delete()  # cascades to the order
    assert not Order.objects.filter(pk=o.pk).exists()
    p.delete()
    assert Product.objects.count() == 0 and Customer.objects.count() == 0


def test_atomic_commit_seen_by_other_connection(migrated):
    other = Customer.objects.using("other")
    with transaction.atomic():
        Customer.objects.create(name="tx-1")
        Customer.objects.create(name="tx-2")
        assert not other.filter(name__startswith="tx-").exists(), "uncommitted rows visible"
    names = other.filter(name__startswith="tx-").values_list("name", flat=True)
    assert sorted(names) == ["tx-1", "tx-2"], "a committed transaction is not visible"


def test_atomic_rollback_and_savepoints(migrated):
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            Customer.objects.create(name="rolled-back")
            raise RuntimeError("roll back")
    assert not Customer.objects.filter(name="rolled-back").exists()

    with transaction.atomic():
        Customer.objects.create(name="outer")
        with pytest.raises(RuntimeError):
            with transaction.atomic():  # a savepoint
                Customer.objects.create(name="inner")
                raise RuntimeError("roll back to the savepoint")
        with pytest.raises(IntegrityError):
            with transaction.atomic():
                Customer.objects.create(name="outer")  # duplicate: only the savepoint fails
        Customer.objects.create(name="after")
    assert sorted(Customer.objects.using("other").values_list("name", flat=True)) == ["after", "outer"]


def test_select_for_update(migrated):
    Product.objects.create(sku="LOCK-1", price="1.00", stock=10)
    Product.objects.create(sku="LOCK-2", price="2.00", stock=20)
    other = Product.objects.using("other")
    with transaction.atomic():
        locked = Product.objects.select_for_update().get(sku="LOCK-1")
        with transaction.atomic(using="other"):
            with pytest.raises(DatabaseError) as info:
                other.select_for_update(nowait=True).get(sku="LOCK-1")
            assert info.value.args[0] == 1205, info.value.args  # lock wait timeout (NOWAIT)
        with transaction.atomic(using="other"):
            free = list(other.select_for_update(skip_locked=True).values_list("sku", flat=True))
            assert free == ["LOCK-2"]
        locked.stock -= 1
        locked.save(update_fields=["stock"])
    assert other.get(sku="LOCK-1").stock == 9
    with transaction.atomic(using="other"):
        assert other.select_for_update(nowait=True).get(sku="LOCK-1").stock == 9


def test_bulk_create(migrated):
    objs = Product.objects.bulk_create(
        [Product(sku=f"BULK-{i:04d}", price=f"{i}.50", stock=i) for i in range(500)], batch_size=100)
    # MariaDB returns the new keys (INSERT ... RETURNING).
    assert len({o.pk for o in objs}) == 500 and all(o.pk for o in objs)
    assert Product.objects.using("other").filter(sku__startswith="BULK-").count() == 500
    for o in objs[:10]:
        o.stock = -1
    Product.objects.bulk_update(objs[:10], ["stock"])
    assert Product.objects.filter(stock=-1).count() == 10


def test_aggregates(migrated):
    ada, grace = Customer.objects.bulk_create([Customer(name="Ada"), Customer(name="Grace")])
    Customer.objects.create(name="Linus")  # no orders
    pen, ink = Product.objects.bulk_create([Product(sku="PEN", price="1.50"),
                                            Product(sku="INK", price="4.00")])
    Order.objects.bulk_create([
        Order(customer=ada, product=pen, quantity=2), Order(customer=ada, product=ink, quantity=1),
        Order(customer=grace, product=pen, quantity=5),
    ])
    totals = Order.objects.aggregate(n=Count("id"), qty=Sum("quantity"), avg=Avg("quantity"),
                                     most=Max("quantity"))
    # MariaDB's AVG of integers has div_precision_increment (4) decimals.
    assert totals == {"n": 3, "qty": 8, "avg": 2.6667, "most": 5}
    per_customer = list(Customer.objects.annotate(n=Count("orders"), qty=Sum("orders__quantity"))
                        .order_by("name").values_list("name", "n", "qty"))
    assert per_customer == [("Ada", 2, 3), ("Grace", 1, 5), ("Linus", 0, None)]
    revenue = dict(Order.objects.values("product__sku")
                   .annotate(r=Sum(F("quantity") * F("product__price")))
                   .values_list("product__sku", "r"))
    assert {k: str(v) for k, v in revenue.items()} == {"PEN": "10.50", "INK": "4.00"}
    assert Customer.objects.filter(Q(orders__quantity__gte=5) | Q(name="Linus")).distinct().count() == 2


def test_inspectdb_names_the_tables(migrated):
    out = command("inspectdb")
    for table in TABLES + ["django_migrations"]:
        assert f"db_table = '{table}'" in out, f"inspectdb does not name {table}"
    assert "class CompatShopOrder(models.Model):" in out
    assert "models.ForeignKey(CompatShopCustomer" in out
