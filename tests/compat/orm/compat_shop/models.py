"""Models of the ORM suite's Django app: a unique name, a decimal price, a foreign key with
PROTECT and one with CASCADE, an index on a datetime column."""

from django.db import models
from django.utils import timezone


class Customer(models.Model):
    name = models.CharField(max_length=100, unique=True)
    email = models.CharField(max_length=200, blank=True)


class Product(models.Model):
    sku = models.CharField(max_length=20, unique=True)
    price = models.DecimalField(max_digits=10, decimal_places=2)
    stock = models.IntegerField(default=0)


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="orders")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="orders")
    quantity = models.IntegerField()
    placed = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["placed"], name="compat_order_placed")]
