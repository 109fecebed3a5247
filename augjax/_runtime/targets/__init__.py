"""Targets that follow the images (masks, boxes, keypoints, rotated boxes): how a call
gives them, how they pass through a chain, and the samplers that read them."""
