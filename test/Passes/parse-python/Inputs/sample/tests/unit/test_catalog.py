import pytest

from shop.catalog import Catalog


@pytest.fixture
def catalog():
    return Catalog()


class TestCatalog:
    @pytest.mark.parametrize("name", ["a", "b"])
    def test_get(self, catalog, name):
        assert catalog

    def helper(self):
        pass


def test_size(catalog):
    assert catalog.size == 0
