"""benchsage.store.importers"""
