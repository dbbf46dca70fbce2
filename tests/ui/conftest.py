from tests.support.fixtures import anyio_backend  # noqa: F401
