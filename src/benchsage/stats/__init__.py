"""benchsage.stats"""
