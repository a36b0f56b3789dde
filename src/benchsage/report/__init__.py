"""benchsage.report"""
