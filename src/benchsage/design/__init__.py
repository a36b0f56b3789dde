"""benchsage.design"""
