"""benchsage.store.exporters"""
