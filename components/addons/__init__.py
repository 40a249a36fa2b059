"""Guest-cluster add-ons: the NVIDIA GPU operator, shared RWX storage, the data Job."""
