"""From a drawing or a file to the 28x28 input: strokes, images, preprocessing; safe reads and atomic writes."""
