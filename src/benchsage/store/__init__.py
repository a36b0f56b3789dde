"""benchsage.store"""
