"""The sandbox models, taken over from `conversations` (whose 0026 drops them from its state).

State only: the tables already exist, created by the conversations migrations under their old
names (`conversations_sandbox...`), and keep every row; `0003` renames them.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('agents', '0012_agent_grants_and_access_requests'),
        # The tables exist from here on, and the conversations app no longer claims the models (two
        # SandboxUser models in one state would both give Agent a `sandbox_user` accessor).
        ('conversations', '0026_sandbox_models_moved'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='SandboxChat',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('dm', 'Direct message'), ('group', 'Group')], max_length=16)),
                        ('peer_id', models.BigIntegerField(help_text='Group peer id (DMs use the user ids)', unique=True)),
                        ('title', models.CharField(blank=True, max_length=255)),
                        ('username', models.CharField(blank=True, max_length=64)),
                        ('invite_hash', models.CharField(blank=True, max_length=64)),
                        ('forum', models.BooleanField(default=False, help_text='A group with topics (a forum supergroup)')),
                        ('next_message_id', models.BigIntegerField(default=1)),
                        ('created', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'conversations_sandboxchat',
                    },
                ),
                migrations.CreateModel(
                    name='SandboxUser',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('user_id', models.BigIntegerField(unique=True)),
                        ('name', models.CharField(max_length=255)),
                        ('username', models.CharField(blank=True, max_length=64)),
                        ('is_bot', models.BooleanField(default=False, help_text='A bot account, as Telegram flags it')),
                        ('blocked_user_ids', models.JSONField(blank=True, default=list)),
                        ('last_name', models.CharField(blank=True, max_length=255)),
                        ('about', models.CharField(blank=True, max_length=140)),
                        ('photos', models.JSONField(blank=True, default=list, help_text='[{id, path, date}], newest first')),
                        ('contact_user_ids', models.JSONField(blank=True, default=list)),
                        ('online', models.BooleanField(default=False, help_text='Shown online, as the account last set it')),
                        ('agent', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='sandbox_user', to='agents.agent')),
                    ],
                    options={
                        'db_table': 'conversations_sandboxuser',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='SandboxMember',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('muted', models.BooleanField(default=False)),
                        ('typing_until', models.DateTimeField(blank=True, null=True)),
                        ('read_up_to', models.BigIntegerField(default=0)),
                        ('unread_mark', models.BooleanField(default=False, help_text="The member marked the chat unread (Telegram's unread_mark); reading clears it")),
                        ('cannot_write', models.CharField(blank=True, choices=[('read_only', 'Read-only channel'), ('restricted', 'Restricted'), ('banned', 'Banned')], help_text='Why this member may not write in the chat, as a Telegram admin would set it', max_length=16)),
                        ('chat', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='sandbox.sandboxchat')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='sandbox.sandboxuser')),
                    ],
                    options={
                        'db_table': 'conversations_sandboxmember',
                    },
                ),
                migrations.AddField(
                    model_name='sandboxchat',
                    name='members',
                    field=models.ManyToManyField(related_name='chats', through='sandbox.SandboxMember', to='sandbox.sandboxuser'),
                ),
                migrations.CreateModel(
                    name='SandboxTopic',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('topic_id', models.BigIntegerField()),
                        ('title', models.CharField(max_length=128)),
                        ('created', models.DateTimeField(auto_now_add=True)),
                        ('chat', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='topics', to='sandbox.sandboxchat')),
                    ],
                    options={
                        'db_table': 'conversations_sandboxtopic',
                        'ordering': ['chat', 'topic_id'],
                        'constraints': [models.UniqueConstraint(fields=('chat', 'topic_id'), name='sandbox_topic_unique_id'), models.UniqueConstraint(fields=('chat', 'title'), name='sandbox_topic_unique_title')],
                    },
                ),
                migrations.CreateModel(
                    name='SandboxUpdate',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('new_message', 'New message'), ('edit', 'Edit'), ('delete', 'Delete'), ('reaction', 'Reaction'), ('typing', 'Typing'), ('unread_mark', 'Marked unread')], max_length=16)),
                        ('message_id', models.BigIntegerField(blank=True, null=True)),
                        ('created', models.DateTimeField()),
                        ('chat', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='updates', to='sandbox.sandboxchat')),
                        ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, to='sandbox.sandboxuser')),
                    ],
                    options={
                        'db_table': 'conversations_sandboxupdate',
                        'ordering': ['id'],
                        'indexes': [models.Index(fields=['chat', 'id'], name='sandbox_update_poll_idx'), models.Index(fields=['created'], name='sandbox_update_created_idx')],
                    },
                ),
                migrations.CreateModel(
                    name='SandboxMessage',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('message_id', models.BigIntegerField()),
                        ('date', models.DateTimeField()),
                        ('text', models.TextField(blank=True)),
                        ('reply_to_id', models.BigIntegerField(blank=True, null=True)),
                        ('topic_id', models.BigIntegerField(blank=True, help_text='The forum topic it was posted in (none: General, or no forum)', null=True)),
                        ('media', models.JSONField(blank=True, default=list, help_text='Sticker or photo parts')),
                        ('reactions', models.JSONField(blank=True, default=list)),
                        ('random_id', models.BigIntegerField(blank=True, null=True)),
                        ('edited', models.BooleanField(default=False)),
                        ('deleted', models.BooleanField(default=False)),
                        ('chat', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='sandbox.sandboxchat')),
                        ('sender', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sandbox_messages', to='sandbox.sandboxuser')),
                    ],
                    options={
                        'db_table': 'conversations_sandboxmessage',
                        'ordering': ['chat', 'message_id'],
                        'indexes': [models.Index(fields=['chat', 'message_id'], name='sandbox_message_poll_idx')],
                        'constraints': [models.UniqueConstraint(fields=('chat', 'message_id'), name='sandbox_message_unique'), models.UniqueConstraint(fields=('sender', 'random_id'), name='sandbox_random_id_unique')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='sandboxmember',
                    constraint=models.UniqueConstraint(fields=('chat', 'user'), name='sandbox_member_unique'),
                ),
            ],
        ),
    ]
