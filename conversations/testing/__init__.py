"""Test support for the conversations app: the loopback MTProto server (`mtproto`)."""
