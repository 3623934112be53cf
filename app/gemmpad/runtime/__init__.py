"""What runs the network: native modules, the kernel registry, the Classifier, backends, the model file."""
