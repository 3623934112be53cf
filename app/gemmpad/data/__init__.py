"""The data sets (MNIST, pendigits, synthetic, paper, forms, non-digits), where they are, and the training arrays."""
