"""Outgoing queues and dispatch of [MS-MQDMPR].

Renders the higher-layer events 3.1.4.12 Take Offline, 3.1.4.13 Bring Online, 3.1.4.14 Pause
Queue and 3.1.4.15 Resume Queue; 3.1.7.1.27 Enqueue Message To An Open Queue,
3.1.7.1.28 Add Message To Dispatch Collection, 3.1.7.1.29 Remove Message From Dispatch
Collection and 3.1.7.1.34 Remove Messages From Dispatch Collection By Queue; the events consumed
by related protocols 3.1.7.2.3 Pause Queue, 3.1.7.2.4 Resume Queue, 3.1.7.2.5 Begin Flow
Control and 3.1.7.2.6 End Flow Control; and 3.1.7.3.9 Dispatch Send Message, which hands the
message to the transfer protocol (MS-MQQB 3.1.7.12) through ``send_user_message_subscribers``.
"""

from __future__ import annotations

from typing import Any

from harness.model.adm import DispatchEntry, OpenQueueDescriptor, OutgoingQueue, Queue, Transaction
from harness.model.enums import EnqueueStatus, MessagePositionState, OutgoingQueueState
from harness.model.errors import UndefinedBehaviour
from harness.model.messages import Message, MessagePosition
from harness.model.qm_queues import Queues

__all__ = ["Outgoing"]

_Deleted = MessagePositionState.Deleted


class Outgoing(Queues):
    """3.1.4.12-3.1.4.15, 3.1.7.1.27-3.1.7.1.29, 3.1.7.1.34, 3.1.7.2.3-3.1.7.2.6 and 3.1.7.3.9."""

    # ================================================================ 3.1.4 higher layer
    def take_offline(self) -> None:
        """3.1.4.12 Take Offline."""
        self.ConnectionActive = False

    def bring_online(self) -> None:
        """3.1.4.13 Bring Online."""
        self.ConnectionActive = True

    def pause_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.4.14 Pause Queue (administrator): generates Pause Queue 3.1.7.2.3."""
        self.process_pause_queue(iQueue)

    def resume_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.4.15 Resume Queue (administrator): generates Resume Queue 3.1.7.2.4."""
        self.process_resume_queue(iQueue)
    # ================================================================ 3.1.7.1
    def enqueue_message_to_an_open_queue(
        self,
        iOpenQueueDescriptor: OpenQueueDescriptor,
        iMessage: Message,
        iTransaction: Transaction | None = None,
    ) -> EnqueueStatus:
        """3.1.7.1.27 Enqueue Message To An Open Queue."""
        if not iOpenQueueDescriptor.Multiple:
            queue = iOpenQueueDescriptor.QueueReference
            if queue is None:
                raise UndefinedBehaviour("3.1.7.1.27", "descriptor has no QueueReference")
            return self.enqueue_message(queue, iMessage, iTransaction)
        iMessage.DestinationMultiQueueFormatName = iOpenQueueDescriptor.FormatName
        for single in iOpenQueueDescriptor.OpenQueueDescriptorCollection:
            copy = iMessage.copy()
            copy.DestinationQueueFormatName = single.FormatName
            queue = single.QueueReference
            if queue is None:
                raise UndefinedBehaviour("3.1.7.1.27", "member descriptor has no QueueReference")
            status = self.enqueue_message(queue, copy, iTransaction)
            if status is not EnqueueStatus.NoError:
                return status
        return EnqueueStatus.NoError

    def add_message_to_dispatch_collection(self, iData: Any, iPosition: MessagePosition) -> None:
        """3.1.7.1.28 Add Message To Dispatch Collection."""
        queue = iPosition.QueueReference
        message = iPosition.MessageReference
        assert isinstance(queue, Queue) and message is not None
        self.DispatchCollection.append(
            DispatchEntry(iPosition, iData, queue.BasePriority + message.Priority, False)
        )
        self.dispatch_send_message()

    def remove_message_from_dispatch_collection(self, iPosition: MessagePosition) -> None:
        """3.1.7.1.29 Remove Message From Dispatch Collection."""
        for entry in self.DispatchCollection:
            if entry.MessagePositionReference is iPosition:
                self.DispatchCollection.remove(entry)
                break
        self.dispatch_send_message()

    def remove_messages_from_dispatch_collection_by_queue(self, iOutgoingQueue: Queue) -> None:
        """3.1.7.1.34 Remove Messages From Dispatch Collection By Queue."""
        self.DispatchCollection[:] = [
            e for e in self.DispatchCollection
            if e.MessagePositionReference.QueueReference is not iOutgoingQueue
        ]
    # ================================================================ 3.1.7.2
    def process_pause_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.7.2.3 Pause Queue."""
        iQueue.State = OutgoingQueueState.OnHold

    def process_resume_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.7.2.4 Resume Queue."""
        iQueue.State = OutgoingQueueState.Inactive

    def begin_flow_control(self) -> None:
        """3.1.7.2.5 Begin Flow Control."""
        self.Throttled = True

    def end_flow_control(self) -> None:
        """3.1.7.2.6 End Flow Control."""
        self.Throttled = False
    # ================================================================ 3.1.7.3.9
    def dispatch_send_message(self) -> None:
        """3.1.7.3.9 Dispatch Send Message."""
        if any(e.SendInProgress for e in self.DispatchCollection):
            return
        candidates = [
            e for e in self.DispatchCollection
            if e.MessagePositionReference.State is not _Deleted
            and isinstance(e.MessagePositionReference.QueueReference, Queue)
            and e.MessagePositionReference.QueueReference.Active
        ]
        if not candidates:
            return
        nextEntryToBeDispatched = max(candidates, key=lambda e: e.Priority)
        nextEntryToBeDispatched.SendInProgress = True
        for subscriber in self.send_user_message_subscribers:
            subscriber(
                nextEntryToBeDispatched.ProtocolData,
                nextEntryToBeDispatched.MessagePositionReference,
            )
