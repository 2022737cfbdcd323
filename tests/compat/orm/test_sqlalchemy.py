"""SQLAlchemy 2.x on the database compat_orm, once with PyMySQL and once with mysqlclient
(dialects mariadb+pymysql / mariadb+mysqldb), through an engine with a connection pool:
create_all, ORM CRUD with a relationship, commit / rollback / nested savepoint, SELECT ... FOR
UPDATE in a transaction (NOWAIT / SKIP LOCKED from another connection), bulk inserts (ORM and
Core executemany), reflection (tables, columns, indexes, foreign keys), and reads on one pooled
connection right after writes committed on another (200 rounds)."""

from decimal import Decimal

import pytest
from sqlalchemy import (ForeignKey, Index, Numeric, String, create_engine, exc, func, insert,
                        inspect, select)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from conftest import DB, HOST, PASSWORD, PORT, USER


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "sa_author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan")


class Book(Base):
    __tablename__ = "sa_book"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    price: Mapped[Decimal] = mapped_column(Numeric(10, 2))
    stock: Mapped[int] = mapped_column(default=0)
    author_id: Mapped[int] = mapped_column(ForeignKey("sa_author.id"))
    author: Mapped[Author] = relationship(back_populates="books")
    __table_args__ = (Index("ix_sa_book_title", "title"),)


@pytest.fixture(scope="module", params=["pymysql", "mysqldb"])
def engine(request):
    eng = create_engine(
        f"mariadb+{request.param}://{USER}:{PASSWORD}@{HOST}:{PORT}/{DB}?charset=utf8mb4",
        pool_size=3, max_overflow=0, pool_timeout=30,
        connect_args={"connect_timeout": 20, "read_timeout": 60})
    Base.metadata.drop_all(eng)
    Base.metadata.create_all(eng)
    yield eng
    eng.dispose()


@pytest.fixture(autouse=True)
def empty_tables(engine):
    with Session(engine) as s, s.begin():
        s.execute(Book.__table__.delete())
        s.execute(Author.__table__.delete())


def count(engine, stmt):
    with engine.connect() as conn:
        return conn.execute(stmt).scalar_one()


def test_reflection(engine):
    insp = inspect(engine)
    assert {"sa_author", "sa_book"} <= set(insp.get_table_names())
    assert [c["name"] for c in insp.get_columns("sa_book")] == [
        "id", "title", "price", "stock", "author_id"]
    price = next(c for c in insp.get_columns("sa_book") if c["name"] == "price")
    assert (price["type"].precision, price["type"].scale) == (10, 2)
    assert insp.get_pk_constraint("sa_book")["constrained_columns"] == ["id"]
    indexes = {i["name"]: i for i in insp.get_indexes("sa_book")}
    assert indexes["ix_sa_book_title"]["column_names"] == ["title"]
    assert not indexes["ix_sa_book_title"]["unique"]
    fks = insp.get_foreign_keys("sa_book")
    assert [(f["constrained_columns"], f["referred_table"], f["referred_columns"]) for f in fks] == [
        (["author_id"], "sa_author", ["id"])]
    uniques = [i for i in insp.get_indexes("sa_author") if i["unique"]]
    uniques += insp.get_unique_constraints("sa_author")
    assert any(u["column_names"] == ["name"] for u in uniques)


def test_crud(engine):
    with Session(engine) as s:
        ada = Author(name="Ada", books=[Book(title="Notes", price=Decimal("12.50"), stock=3)])
        s.add(ada)
        s.commit()
        author_id = ada.id
    with Session(engine) as s:
        ada = s.get(Author, author_id)
        assert [(b.title, b.price, b.stock) for b in ada.books] == [("Notes", Decimal("12.50"), 3)]
        ada.books[0].stock = 2
        ada.books.append(Book(title="More notes", price=Decimal("1.00")))
        s.commit()
        assert s.scalars(select(Book.stock).where(Book.title == "Notes")).one() == 2
        assert s.execute(select(func.count()).select_from(Book)).scalar_one() == 2
        s.delete(ada)  # cascades to the books
        s.commit()
    assert count(engine, select(func.count()).select_from(Book)) == 0
    with pytest.raises(exc.IntegrityError):
        with Session(engine) as s, s.begin():
            s.add_all([Author(name="Twin"), Author(name="Twin")])


def test_commit_rollback_savepoint(engine):
    with Session(engine) as s:
        s.add(Author(name="rolled-back"))
        s.flush()
        s.rollback()
    assert count(engine, select(func.count()).select_from(Author)) == 0
    with Session(engine) as s, s.begin():
        s.add(Author(name="outer"))
        nested = s.begin_nested()  # SAVEPOINT
        s.add(Author(name="inner"))
        s.flush()
        nested.rollback()
        with pytest.raises(exc.IntegrityError):
            with s.begin_nested():
                s.add(Author(name="outer"))  # duplicate: only the savepoint fails
        s.add(Author(name="after"))
    with engine.connect() as conn:
        names = conn.execute(select(Author.name).order_by(Author.name)).scalars().all()
    assert names == ["after", "outer"]


def test_select_for_update(engine):
    with Session(engine) as s, s.begin():
        a = Author(name="Lock")
        s.add_all([Book(title="L1", price=1, stock=10, author=a),
                   Book(title="L2", price=2, stock=20, author=a)])
    with Session(engine) as s, s.begin():
        book = s.scalars(select(Book).where(Book.title == "L1").with_for_update()).one()
        with Session(engine) as other, other.begin():
            with pytest.raises(exc.OperationalError) as info:
                other.execute(select(Book).where(Book.title == "L1").with_for_update(nowait=True))
            assert info.value.orig.args[0] == 1205  # lock wait timeout (NOWAIT)
        with Session(engine) as other, other.begin():
            free = other.scalars(select(Book.title).with_for_update(skip_locked=True)).all()
            assert free == ["L2"]
        book.stock -= 1
    with Session(engine) as s, s.begin():
        stmt = select(Book.stock).where(Book.title == "L1").with_for_update(nowait=True)
        assert s.scalars(stmt).one() == 9


def test_bulk_insert(engine):
    with Session(engine) as s, s.begin():
        a = Author(name="Bulk")
        s.add(a)
        s.flush()
        s.execute(insert(Book), [{"title": f"B{i:04d}", "price": Decimal(i) / 4, "stock": i,
                                  "author_id": a.id} for i in range(400)])
    with engine.begin() as conn:  # Core executemany
        author_id = conn.execute(select(Author.id)).scalar_one()
        conn.execute(Book.__table__.insert(), [{"title": f"C{i:04d}", "price": 1, "stock": 1,
                                                "author_id": author_id} for i in range(100)])
    with engine.connect() as conn:
        n, total = conn.execute(select(func.count(), func.sum(Book.stock))).one()
    assert (n, total) == (500, sum(range(400)) + 100)


@pytest.mark.parametrize("mode", ["transactions", "autocommit"])
def test_read_after_write_across_pooled_connections(engine, mode):
    """Two connections held from the pool: each write committed on one is read on the other
    at once (with transactions, the reader ends its transaction every round, as a pooled
    checkout would; in AUTOCOMMIT mode every statement is its own transaction)."""
    eng = engine.execution_options(isolation_level="AUTOCOMMIT") if mode == "autocommit" else engine
    misses = []
    with eng.connect() as writer, eng.connect() as reader:
        assert writer.connection.dbapi_connection is not reader.connection.dbapi_connection
        assert engine.pool.checkedout() == 2
        author_id = writer.execute(insert(Author).values(name="rw")).inserted_primary_key[0]
        writer.commit()
        for i in range(200):
            writer.execute(insert(Book).values(title=f"rw{i}", price=1, author_id=author_id))
            writer.commit()
            seen = reader.execute(select(func.count()).select_from(Book).where(
                Book.title == f"rw{i}")).scalar_one()
            reader.rollback()
            if seen != 1:
                misses.append(i)
    assert not misses, f"{len(misses)}/200 reads missed a write committed on another connection"
