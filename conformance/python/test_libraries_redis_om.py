"""redis-om's documented flow against the server under test: a JsonModel (with an embedded model)
and a HashModel declared with `index=True` whose fields are `Field(index=True)`, `Migrator().run()` creating their indexes,
save, get, and find with expressions (equality, numeric comparison, full-text, embedded field,
and/or/not, sort, count, first, pagination), update and delete."""

import os
from typing import List

import pytest

from conftest import client
from libflows import URL

# redis-om's documented way to name the server: read when a model first needs a connection.
os.environ["REDIS_OM_URL"] = URL

from redis_om import (  # noqa: E402
    EmbeddedJsonModel,
    Field,
    HashModel,
    JsonModel,
    Migrator,
    NotFoundError,
)


class Address(EmbeddedJsonModel, index=True):
    city: str = Field(index=True)
    country: str = Field(index=True)


class Customer(JsonModel, index=True):
    first_name: str = Field(index=True)
    last_name: str = Field(index=True)
    age: int = Field(index=True, sortable=True)
    bio: str = Field(index=True, full_text_search=True)
    skills: List[str] = Field(index=True)
    address: Address

    class Meta:
        global_key_prefix = "flows_om"


class Order(HashModel, index=True):
    sku: str = Field(index=True)
    quantity: int = Field(index=True, sortable=True)
    note: str = Field(index=True, full_text_search=True)

    class Meta:
        global_key_prefix = "flows_om"


@pytest.fixture
def migrated():
    c = client()
    c.flushall()
    Migrator().run()
    yield c
    c.close()


def customers():
    data = [
        ("Ann", "Lee", 34, "doctor who likes running", ["medicine", "running"], "Paris", "FR"),
        ("Bob", "Lee", 19, "student who plays chess", ["chess"], "Lyon", "FR"),
        ("Cid", "Moss", 52, "engineer who builds bridges", ["bridges", "running"], "Oslo", "NO"),
        ("Dee", "Vale", 41, "retired dentist who likes sailing", ["sailing"], "Paris", "FR"),
    ]
    out = []
    for first, last, age, bio, skills, city, country in data:
        c = Customer(first_name=first, last_name=last, age=age, bio=bio, skills=skills,
                     address=Address(city=city, country=country))
        c.save()
        out.append(c)
    return out


def names(found):
    return sorted(c.first_name for c in found)


def test_json_model(migrated):
    ann, bob, cid, dee = customers()
    assert migrated.keys("flows_om:*Customer*") != []

    got = Customer.get(ann.pk)
    assert got == ann and got.address.city == "Paris"
    with pytest.raises(NotFoundError):
        Customer.get("no-such-pk")

    assert names(Customer.find(Customer.last_name == "Lee").all()) == ["Ann", "Bob"]
    assert names(Customer.find(Customer.age > 40).all()) == ["Cid", "Dee"]
    assert names(Customer.find((Customer.age >= 19) & (Customer.age <= 34)).all()) == ["Ann", "Bob"]
    assert names(Customer.find((Customer.last_name == "Lee") & (Customer.age < 30)).all()) == ["Bob"]
    assert names(Customer.find((Customer.first_name == "Ann") | (Customer.first_name == "Cid")).all()) == ["Ann", "Cid"]
    assert names(Customer.find(~(Customer.last_name == "Lee")).all()) == ["Cid", "Dee"]
    assert names(Customer.find(Customer.bio % "likes").all()) == ["Ann", "Dee"]
    assert names(Customer.find(Customer.address.city == "Paris").all()) == ["Ann", "Dee"]
    assert names(Customer.find(Customer.skills << ["running"]).all()) == ["Ann", "Cid"]

    by_age = Customer.find(Customer.address.country == "FR").sort_by("-age").all()
    assert [c.first_name for c in by_age] == ["Dee", "Ann", "Bob"]
    assert Customer.find(Customer.address.country == "FR").count() == 3
    assert Customer.find(Customer.last_name == "Moss").first() == cid
    assert [c.first_name for c in Customer.find().sort_by("age").page(offset=1, limit=2)] == ["Ann", "Dee"]

    bob.age = 20
    bob.save()
    assert Customer.get(bob.pk).age == 20
    assert names(Customer.find(Customer.age == 20).all()) == ["Bob"]
    Customer.find(Customer.pk == dee.pk).update(bio="dentist who likes the sea")
    assert Customer.get(dee.pk).bio == "dentist who likes the sea"

    assert Customer.delete(ann.pk) == 1
    assert names(Customer.find(Customer.last_name == "Lee").all()) == ["Bob"]
    assert Customer.find().count() == 3


def test_hash_model(migrated):
    orders = [Order(sku="tea-1", quantity=3, note="green tea, urgent"),
              Order(sku="tea-2", quantity=10, note="black tea"),
              Order(sku="cup-1", quantity=1, note="a large cup, urgent")]
    for o in orders:
        o.save()
    assert Order.get(orders[1].pk) == orders[1]
    assert migrated.hgetall(orders[1].key())["sku"] == "tea-2"

    assert sorted(o.sku for o in Order.find(Order.note % "urgent").all()) == ["cup-1", "tea-1"]
    assert [o.sku for o in Order.find(Order.quantity > 2).sort_by("quantity").all()] == ["tea-1", "tea-2"]
    assert [o.sku for o in Order.find(Order.sku == "cup-1").all()] == ["cup-1"]
    assert Order.find((Order.quantity < 5) & (Order.note % "tea")).count() == 1
    assert Order.find().count() == 3

    Order.delete(orders[0].pk)
    assert Order.find(Order.note % "urgent").count() == 1
    assert sorted(Order.all_pks()) == sorted([orders[1].pk, orders[2].pk])
