"""With REDIS_URL set, the channel layer and the django-q2 broker move to Redis and no code changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import redis

REDIS_URL = os.environ.get("CINDY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

PROBE = """
import django, os, json, sys
os.environ['DJANGO_SETTINGS_MODULE'] = 'cindy_site.settings'
django.setup()
# Loaded by the start itself, on this one thread (conversations/apps.py), not first by some thread later.
loaded_at_setup = 'redis' in sys.modules and 'redis.asyncio' in sys.modules
from django.conf import settings
from django_q.brokers import get_broker
from channels.layers import get_channel_layer
from asgiref.sync import async_to_sync

# A queue of its own: gateways and workers that other tests start on this Redis database use the
# cluster's queue, and a task one of them left there must not be taken for the probe's.
broker = get_broker(list_key='redis-mode-probe-%d' % os.getpid())
broker.ping()
broker.purge_queue()
broker.enqueue('signed-task-payload')
task = broker.dequeue()
broker.delete_queue()

layer = get_channel_layer()
channel = async_to_sync(layer.new_channel)()
async_to_sync(layer.send)(channel, {'type': 'probe', 'n': 1})
received = async_to_sync(layer.receive)(channel)
print(json.dumps({
    'loaded_at_setup': loaded_at_setup,
    'broker': type(broker).__name__,
    'task': task[0][1].decode() if isinstance(task[0][1], bytes) else task[0][1],
    'layer': type(layer).__name__,
    'received': received['n'],
}))
"""


def test_redis_url_moves_the_task_broker_and_the_channel_layer_to_redis():
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except redis.RedisError:
        pytest.skip(f"no Redis answers at {REDIS_URL} (./test.sh starts one)")
    env = {**os.environ, "REDIS_URL": REDIS_URL}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "loaded_at_setup": True,
        "broker": "Redis",
        "task": "signed-task-payload",
        "layer": "RedisChannelLayer",
        "received": 1,
    }
