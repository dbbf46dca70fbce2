from tests.support.fixtures import anyio_backend, fake_openai

__all__ = ["anyio_backend", "fake_openai"]
