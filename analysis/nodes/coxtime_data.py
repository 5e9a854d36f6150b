"""pycox's Cox-Time training data with its control sampling vectorised (imported when a network is trained).

For each incident in a batch Cox-Time samples a control among the samples still at risk at its time. pycox looks
each risk set up in a dict, one incident at a time, in Python: at 2,000 nodes, more of a network's training time
than the network. The training samples are sorted by duration, so a risk set is the suffix from the first sample
of that duration: its start (np.searchsorted) and length say it all. The same uniform draws from numpy's global
generator, so the same controls, batches and networks as pycox's own sampler (tests/test_node_models.py)."""
from __future__ import annotations

import numpy as np
import torchtuples as tt
from pycox.models.data import CoxTimeDataset


class SortedCoxTimeDataset(CoxTimeDataset):
    def __init__(self, input, durations, events, n_control=1):
        super().__init__(input, durations, events, n_control)
        self.sorted_durations = np.asarray(durations)  # pycox sorts them before building the dataset

    def __getitem__(self, index):
        """CoxTimeDataset.__getitem__ and CoxCCDataset.__getitem__ with sample_alive_from_dates vectorised."""
        if not hasattr(index, "__iter__"):
            index = [index]
        durations = self.durations_tensor.iloc[index]
        fails = self.durations.iloc[index]
        x_case = self.input.iloc[fails.index]
        first = np.searchsorted(self.sorted_durations, fails.values, side="left")
        draws = (np.random.uniform(size=(self.n_control, fails.size)) * (len(self.sorted_durations) - first)).astype("int")
        x_control = tt.TupleTree(self.input.iloc[idx] for idx in first + draws)
        case, control = tt.tuplefy(x_case, x_control).to_tensor()
        return tt.tuplefy(case + durations, control.apply_nrec(lambda x: x + durations))
