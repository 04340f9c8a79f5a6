"""Notifications: what is news among check outcomes and stalls, and its delivery to people.

No Dagster here: the sensors in `automation/notifications.py` feed plain outcomes in and keep
the JSON state this package hands back in their cursors.
"""
