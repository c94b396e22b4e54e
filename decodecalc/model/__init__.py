"""What is deployed, before any batch or context: number formats, hardware, tensor groups
and precision, layer kinds (attention, MLA, linear attention, Mamba, MoE) and the model as a
stack of them."""
