from ctxstore.store import MemoryStore

from .store_contract import StoreContract


class TestMemoryStore(StoreContract):
    def make_store(self, tmp_path):
        return MemoryStore()
