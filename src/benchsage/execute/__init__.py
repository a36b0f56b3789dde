"""benchsage.execute"""
