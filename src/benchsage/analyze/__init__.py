"""benchsage.analyze"""
