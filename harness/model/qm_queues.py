"""Queues of [MS-MQDMPR]: create, delete, open, close and purge.

Renders the higher-layer events 3.1.4.1 Queue Manager Started and 3.1.4.2 Queue Manager
Stopped, and 3.1.7.1.3 Create Queue, 3.1.7.1.4 Delete Queue, 3.1.7.1.5 Open Queue (with
3.1.7.3.8 Expand Format Name and the share modes of 3.1.1.17), 3.1.7.1.6 Close Queue,
3.1.7.1.7 Purge Queue and 3.1.7.1.33 Set Queue Defaults; format names are [MS-MQMQ] 2.1's
(packets.formatname).
"""

from __future__ import annotations

import itertools
import uuid

from harness.model.adm import OpenQueueDescriptor, OutgoingQueue, Queue
from harness.model.cursor import Cursor
from harness.model.enums import (
    DirectoryOperationResult,
    MessageClass,
    MessagePositionState,
    MQStatus,
    OutgoingQueueState,
    QueueAccessType,
    QueueManagerState,
    QueueShareMode,
    QueueType,
)
from harness.model.qm_reads import Reads
from packets.formatname import (
    FormatName,
    FormatNameError,
    format_name_kind,
    parse_format_names,
    parse_path_name,
    try_parse_format_name,
)

__all__ = ["Queues"]

_Available = MessagePositionState.Available
_PurgePending = MessagePositionState.PurgePending
_OK = MQStatus.MQ_OK
_PEEK_ACCESS = (QueueAccessType.PeekAccess, QueueAccessType.PeekAdminAccess)


def _unsupported_operation(
    kind: str | None, fmt: FormatName | None, iRequiredAccess: QueueAccessType
) -> MQStatus | None:
    """3.1.7.1.5: MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION for an access the format name's kind
    does not allow (receive or peek through an HTTP direct or a multicast name, send through a
    machine name); None otherwise."""
    Send = QueueAccessType.SendAccess
    if kind == "DIRECT" and fmt is not None and fmt.is_http and iRequiredAccess is not Send:
        return MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    if kind == "MACHINE" and iRequiredAccess is Send:
        return MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    if kind == "MULTICAST" and iRequiredAccess is not Send:
        return MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    return None


class Queues(Reads):
    """3.1.4.1-3.1.4.2, 3.1.7.1.3-3.1.7.1.7, 3.1.7.1.33 and 3.1.7.3.8."""

    # ================================================================ 3.1.4 higher layer
    def queue_manager_started(self) -> None:
        """3.1.4.1 Queue Manager Started (the MS-MQSO 6.6.2 initialization is out of scope)."""
        self.QueueManagerState = QueueManagerState.Ready

    def queue_manager_stopped(self) -> None:
        """3.1.4.2 Queue Manager Stopped: no processing steps in this protocol."""
    # ================================================================ 3.1.7.1
    def set_queue_defaults(self, iQueue: Queue) -> None:
        """3.1.7.1.33 Set Queue Defaults."""
        iQueue.Label = ""
        iQueue.Type = uuid.UUID(int=0)
        iQueue.Journaling = False
        iQueue.Quota = 0xFFFFFFFF
        iQueue.JournalQuota = 0xFFFFFFFF
        iQueue.Authentication = False
        iQueue.PrivacyLevel = "Optional"
        iQueue.Transactional = False
        iQueue.MulticastAddress = None
        # 3.1.7.1.3.1 needs LDAP and SIDs; the model records that the default applies.
        iQueue.Security = "DefaultQueueSecurityDescriptor"
        iQueue.BasePriority = 0

    def create_queue(
        self, iQueue: Queue, iSkipDirectory: bool = False
    ) -> tuple[MQStatus | DirectoryOperationResult, Queue | None]:
        """3.1.7.1.3 Create Queue: returns (rStatus, rQueue)."""
        path = iQueue.Pathname
        try:
            pathName = parse_path_name(path)  # [MS-MQMQ] 2.1.1
        except FormatNameError:
            return (MQStatus.MQ_ERROR_ILLEGAL_FORMATNAME, None)
        newQueue = self.new_queue(type(iQueue))
        if not (pathName.subqueue or pathName.system):  # not a subqueue: create its queue journal
            newQueue.JournalQueueReference = self.new_queue(Queue, path + ";journal")
        for name in (
            "Label", "Type", "Pathname", "Journaling", "Quota", "JournalQuota", "Authentication",
            "PrivacyLevel", "Transactional", "MulticastAddress", "Security", "BasePriority",
        ):
            setattr(newQueue, name, getattr(iQueue, name))
        if pathName.private:
            newQueue.QueueType = QueueType.Private
        elif pathName.system:
            newQueue.QueueType = QueueType.System
        else:
            newQueue.QueueType = QueueType.Public
        now = int(self.clock())
        newQueue.CreateTime = now
        newQueue.ModifyTime = now
        newQueue.QualifiedPathname = self.QualifiedComputerName + path[len(pathName.computer) :]
        newQueue.Scope = "Enterprise"
        if newQueue.QueueType is QueueType.Private:
            used = {q.PrivateQueueNumber for q in self.QueueCollection
                    if q.QueueType is QueueType.Private}
            newQueue.PrivateQueueNumber = next(n for n in itertools.count(1) if n not in used)
        newQueue.Identifier = self.id_generator()
        if newQueue.QueueType is QueueType.Public and not iSkipDirectory:
            # Create Directory Object (3.1.7.1.18): the model has no directory service.
            return (DirectoryOperationResult.DirectoryNotConnected, None)
        self.QueueCollection.append(newQueue)
        return (_OK, newQueue)

    def delete_queue(self, iQueue: Queue, iSkipDirectory: bool = False) -> MQStatus:
        """3.1.7.1.4 Delete Queue."""
        for iMessagePosition in list(iQueue.MessagePositionList):
            self.message_position_deleted(iQueue, iMessagePosition, MessageClass.NackQueueDeleted)
        for iQueueDesc in iQueue.OpenQueueDescriptorCollection:
            iQueueDesc.QueueReference = None
        if iQueue in self.QueueCollection:
            self.QueueCollection.remove(iQueue)
        return _OK

    def find_queue(self, iFormatName: str) -> Queue | None:
        """Python-only: the Queue in QueueCollection that a format name designates (3.1.7.1.5)."""
        low = iFormatName.lower()
        for q in self.QueueCollection:
            if isinstance(q, OutgoingQueue) and q.DestinationFormatName.lower() == low:
                return q
        fmt = try_parse_format_name(iFormatName)  # [MS-MQMQ] 2.1
        if fmt is None:
            return None
        if fmt.kind == "DIRECT":
            return self._find_direct(fmt)
        if fmt.kind == "PRIVATE":
            if fmt.guid != self.Identifier:
                return None
            found = (q for q in self.QueueCollection
                     if q.QueueType is QueueType.Private and q.PrivateQueueNumber == fmt.number)
            return next(found, None)
        if fmt.kind == "PUBLIC":
            return next((q for q in self.QueueCollection if q.Identifier == fmt.guid), None)
        return None

    def _find_direct(self, fmt: FormatName) -> Queue | None:
        """The local queue a DIRECT format name ([MS-MQMQ] 2.1.2) designates: its machine is this
        one (``.``, ComputerName or QualifiedComputerName) and its path names the queue."""
        if fmt.machine.lower() not in (".", self.ComputerName.lower(), self.QualifiedComputerName.lower()):
            return None
        qpart = fmt.queue_path.lower()
        for q in self.QueueCollection:
            if not isinstance(q, OutgoingQueue) and q.Pathname.split("\\", 1)[-1].lower() == qpart:
                return q
        return None

    def open_queue(
        self,
        iFormatName: str,
        iRequiredAccess: QueueAccessType,
        iSharedMode: QueueShareMode,
    ) -> tuple[MQStatus, OpenQueueDescriptor | None]:
        """3.1.7.1.5 Open Queue: returns (rStatus, rOpenQueueDescriptor)."""
        ok, expanded = self.expand_format_name(iFormatName)
        if not ok or expanded is None:
            return (MQStatus.MQ_ERROR_ILLEGAL_FORMATNAME, None)
        iFormatName = expanded
        if "," in iFormatName:  # multiple-element format name (MS-MQMQ 2.1.7)
            return self._open_multiple_element(iFormatName, iRequiredAccess, iSharedMode)
        kind = format_name_kind(iFormatName)  # [MS-MQMQ] 2.1
        fmt = try_parse_format_name(iFormatName)
        denied = _unsupported_operation(kind, fmt, iRequiredAccess)
        if denied is not None:
            return (denied, None)
        queueObj = self.find_queue(iFormatName)
        if queueObj is None:
            status = self._no_queue_status(kind, fmt, iRequiredAccess)
            if status is not None:
                return (status, None)
            queueObj = self._create_outgoing_queue(iFormatName, kind, fmt)
        violation = self._sharing_violation(queueObj, iRequiredAccess, iSharedMode)
        if violation is not None:
            return (violation, None)
        handle = self.new_handle()
        newDesc = OpenQueueDescriptor(
            handle, handle, iRequiredAccess, iSharedMode, queueObj, iFormatName, Multiple=False
        )
        queueObj.OpenQueueDescriptorCollection.append(newDesc)
        return (_OK, newDesc)

    def _open_multiple_element(
        self, iFormatName: str, iRequiredAccess: QueueAccessType, iSharedMode: QueueShareMode
    ) -> tuple[MQStatus, OpenQueueDescriptor | None]:
        """3.1.7.1.5 for a multiple-element format name ([MS-MQMQ] 2.1.7): send access with
        DenyNone only; one member descriptor per element, opened as a single-element name."""
        Send = QueueAccessType.SendAccess
        if iRequiredAccess is not Send:
            return (MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None)
        if iSharedMode is not QueueShareMode.DenyNone:
            return (MQStatus.MQ_ERROR_UNSUPPORTED_ACCESS_MODE, None)
        handle = self.new_handle()
        newDesc = OpenQueueDescriptor(
            handle, handle, Send, QueueShareMode.DenyNone, None, iFormatName, Multiple=True
        )
        for single in iFormatName.split(","):
            status, desc = self.open_queue(single, Send, QueueShareMode.DenyNone)
            if status is not _OK or desc is None:
                self.close_queue(newDesc)
                return (status, None)
            newDesc.OpenQueueDescriptorCollection.append(desc)
        return (_OK, newDesc)

    def _no_queue_status(
        self, kind: str | None, fmt: FormatName | None, iRequiredAccess: QueueAccessType
    ) -> MQStatus | None:
        """3.1.7.1.5 when QueueCollection holds no queue of the format name: the status that ends
        the open, or None when an OutgoingQueue is to be created for it."""
        if iRequiredAccess is not QueueAccessType.SendAccess:
            return MQStatus.MQ_ERROR_QUEUE_NOT_FOUND
        machine = fmt.machine if fmt is not None else ""
        if kind == "DIRECT" and machine.lower() in (self.ComputerName.lower(), "."):
            return MQStatus.MQ_ERROR_QUEUE_NOT_FOUND
        if kind == "PUBLIC":
            # Read Directory (3.1.7.1.20) finds nothing: the model has no directory.
            return MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
        if kind == "PRIVATE":
            if fmt is None:
                return MQStatus.MQ_ERROR_ILLEGAL_FORMATNAME
            if fmt.guid == self.Identifier:
                return MQStatus.MQ_ERROR_QUEUE_NOT_FOUND
        return None

    def _create_outgoing_queue(self, iFormatName: str, kind: str | None, fmt: FormatName | None) -> OutgoingQueue:
        """3.1.7.1.5: a new OutgoingQueue (3.1.1.3) for a remote format name, Inactive (Locked
        under HardenedSecurity unless the name is HTTP)."""
        newQueue = self.new_queue(OutgoingQueue)
        assert isinstance(newQueue, OutgoingQueue)
        newQueue.Identifier = self.id_generator()
        newQueue.Label = iFormatName
        newQueue.DestinationFormatName = iFormatName
        newQueue.NextHops = None
        newQueue.State = OutgoingQueueState.Inactive
        if not (fmt is not None and fmt.is_http) and self.HardenedSecurity:
            newQueue.State = OutgoingQueueState.Locked
        if kind == "MULTICAST":
            newQueue.Multicast = True
        # The new outgoing queue joins QueueCollection so later opens share it (3.1.3
        # iterates QueueCollection for OutgoingQueue instances).
        self.QueueCollection.append(newQueue)
        return newQueue

    def _sharing_violation(
        self, queueObj: Queue, iRequiredAccess: QueueAccessType, iSharedMode: QueueShareMode
    ) -> MQStatus | None:
        """3.1.7.1.5's share-mode checks (3.1.1.17) against the descriptors that hold queueObj:
        the status that denies the open, or None."""
        Receive = QueueAccessType.ReceiveAccess
        DenyReceive = QueueShareMode.DenyReceive
        descs = queueObj.OpenQueueDescriptorCollection
        if any(d.ShareMode is DenyReceive and d.AccessType is Receive for d in descs):
            if iSharedMode is DenyReceive or (
                iSharedMode is QueueShareMode.DenyNone and iRequiredAccess is Receive
            ):
                return MQStatus.MQ_ERROR_SHARING_VIOLATION
            # The steps let a peek open through, although 3.1.1.17 says DenyReceive denies
            # peeking too (DMPR-3.1.7.1.5-SHARE-PEEK: PEEK_PAST_DENY_RECEIVE_STATUS).
            if iRequiredAccess in _PEEK_ACCESS and self.PEEK_PAST_DENY_RECEIVE_STATUS is not _OK:
                return self.PEEK_PAST_DENY_RECEIVE_STATUS
        elif any(d.ShareMode is DenyReceive and d.AccessType in _PEEK_ACCESS for d in descs):
            if iRequiredAccess is Receive:
                return MQStatus.MQ_ERROR_SHARING_VIOLATION
        elif iSharedMode is DenyReceive and any(
            d.ShareMode is QueueShareMode.DenyNone and d.AccessType is Receive for d in descs
        ):
            return MQStatus.MQ_ERROR_SHARING_VIOLATION
        return None

    def close_queue(self, iQueueDesc: OpenQueueDescriptor) -> None:
        """3.1.7.1.6 Close Queue."""
        if iQueueDesc.Multiple:
            # (the spec's first step, "If QueueReference is NULL", would end here for every
            # multiple-element descriptor; its members are closed as the next step says)
            for d in list(iQueueDesc.OpenQueueDescriptorCollection):
                self.close_queue(d)
            return
        queue = iQueueDesc.QueueReference
        if queue is None:
            return
        for readOp in list(iQueueDesc.WaitingMessageReadOperationCollection):
            if readOp.Tag is not None:
                self.cancel_waiting_message_read_request(
                    queue, readOp.Tag, MQStatus.MQ_ERROR_OPERATION_CANCELLED
                )
        for cursorObj in list(iQueueDesc.CursorCollection):
            assert isinstance(cursorObj, Cursor)  # Open Cursor (3.1.7.1.1) put it there
            self.close_cursor(cursorObj)
        if iQueueDesc in queue.OpenQueueDescriptorCollection:
            queue.OpenQueueDescriptorCollection.remove(iQueueDesc)

    def purge_queue(self, iQueue: Queue) -> None:
        """3.1.7.1.7 Purge Queue."""
        for iMessagePosition in list(iQueue.MessagePositionList):
            if iMessagePosition.State is not _Available:
                iMessagePosition.State = _PurgePending
            else:
                self.message_position_deleted(
                    iQueue, iMessagePosition, MessageClass.NackQueuePurged
                )
    # ================================================================ 3.1.7.3.8
    def expand_format_name(self, iInputFormatName: str) -> tuple[bool, str | None]:
        """3.1.7.3.8 Expand Format Name: returns (rStatus, rOutputFormatName)."""
        if format_name_kind(iInputFormatName) != "DL" and "," not in iInputFormatName:
            return (True, iInputFormatName)
        try:
            parsed = parse_format_names(iInputFormatName)  # [MS-MQMQ] 2.1.7
        except FormatNameError:
            return (False, None)
        if any(e.kind == "DL" for e in parsed):
            # Resolve Distribution List (MS-MQDSSM 3.1.6.9) needs the directory.
            return (False, None)
        seen: dict[str, str] = {}  # one element per queue: the name as written, keyed by its canonical form
        for text, e in sorted(zip(iInputFormatName.split(","), parsed, strict=True), key=lambda p: p[0].lower()):
            seen.setdefault(str(e).lower(), text)
        output = list(seen.values())
        if len(output) == 1:
            return (True, output[0])
        return (True, ",".join(output))
