from django.dispatch import Signal

message_created = Signal()
