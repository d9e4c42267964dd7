"""The embedded default's task queue: kombu's file-system transport, each message written whole.

kombu (5.7) creates a message's file and then writes into it; a worker polling the folder in between moves and
reads an empty file, and the JSON error ends the worker ("Unrecoverable error: JSONDecodeError", once in a
30-minute soak of `make run`, which then stops every process). Here a message is written under a name the
workers skip (`….msg.part`) and renamed into place, which is atomic on one file system.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # kombu's own name (its order is the queue's order); a reader takes only "<queue>.msg"
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = f"{final}.part"
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
