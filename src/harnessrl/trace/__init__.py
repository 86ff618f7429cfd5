"""trace"""
