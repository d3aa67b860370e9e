"""Variational inference and learning in sigmoid belief networks (thesis ch. 2).

- ``saul_bound``: Saul et al.'s bound 2.12 and mean field (2.13-2.18, App. A);
- ``mixture_bound``: mixtures of mean-field distributions (2.19-2.37);
- ``markov_chain``: the Markov-chain Q-distribution (2.38-2.50) with the App. B gradients;
- ``learning``: gradient ascent on the bound in the network weights (§2.5.2).

Every function is batched over a leading axis (networks, or networks x patterns).
"""
