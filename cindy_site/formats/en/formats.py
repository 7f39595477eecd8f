"""Cindy's one way of writing dates and times, in the admin and the dashboard alike.

`FORMAT_MODULE_PATH` puts this module before Django's own English formats, which wrote
"Nov. 29, 2026, 2:03 p.m." in the admin while the dashboard wrote "2026-11-29 14:03". Times are in
TIME_ZONE; the dashboard's script writes the same format in the same zone (static/dashboard/live.js).
"""

DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
