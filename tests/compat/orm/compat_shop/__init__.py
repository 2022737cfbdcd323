"""The Django app of the ORM suite: customers, products and orders (see models.py)."""
