"""Comms: how a store reduces pushed values and broadcasts pulled ones."""
from .base import Comm, create_comm, sum_row_sparse
from .copies import copy_array
from .cpu import CommCPU
from .device import CommDevice
from .nccl import CommNCCL
from .tree import CommTree

__all__ = ["Comm", "CommCPU", "CommDevice", "CommNCCL", "CommTree", "create_comm", "copy_array",
           "sum_row_sparse"]
