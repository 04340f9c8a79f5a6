"""Dagster automation: schedules, sensors and the notification sensor."""
