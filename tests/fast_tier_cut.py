"""The fast tier's budget cut, written by ``python tests/suite_profile.py <profile>
[<fast-tier profile>] --cut`` from CPU profiles (CONTRIBUTING.md, "The tests"): a
parametrized test whose fast parameter sets cost 2.0 CPU-s or more
together runs its cheapest set in the fast tier (``ONE_PARAM``); a test of
2.0 CPU-s or more leaves the tier where its module keeps a cheaper test
(``LEFT_OUT``). CI runs them all. Not edited by hand: written again from a new
profile."""

from __future__ import annotations

ONE_PARAM: dict[str, str] = {
    "tests/catalog/test_color.py::test_channel_permute_matches_torchvision_with_its_permutations": "5",  # noqa: E501
    "tests/catalog/test_color.py::test_gradient_with_respect_to_float_images": "grayscale",
    "tests/catalog/test_color.py::test_sample_then_apply_is_the_call_bitwise": "grayscale-uint8",
    "tests/catalog/test_contrib_ops.py::test_editing_params_to_neutral_values_gives_the_identity": "pixel_dropout",  # noqa: E501
    "tests/catalog/test_contrib_ops.py::test_gradients_through_apply_match_finite_differences": "gaussian_noise-None",  # noqa: E501
    "tests/catalog/test_contrib_ops.py::test_sample_then_apply_equals_the_call_and_fields_are_documented": "water",  # noqa: E501
    "tests/catalog/test_copy_paste.py::test_matches_the_numpy_reference": "float32",
    "tests/catalog/test_crop.py::test_random_crop_is_a_window_of_torchvision_pad": "float32-constant-padding1-fill1",  # noqa: E501
    "tests/catalog/test_crop.py::test_rrc_box_matches_torchvision_make_params": "40-12-scale3-ratio3-fallbacks3",  # noqa: E501
    "tests/catalog/test_erase.py::test_sample_then_apply_is_the_call_bitwise": "cutout-kw3-fields3-uint8",  # noqa: E501
    "tests/catalog/test_geometry.py::test_chw_equals_hwc_and_keys_reproduce": "rot90-params7",
    "tests/catalog/test_geometry.py::test_one_fill_config_serves_both_dtypes": "translate_x-params2-nearest",  # noqa: E501
    "tests/catalog/test_geometry.py::test_public_path_pair_v_v_equals_number_v_and_the_traced_kernel": "shear_x-shear--0.2",  # noqa: E501
    "tests/catalog/test_jpeg.py::test_equals_pillow": "50-shape0",
    "tests/catalog/test_kernels.py::test_the_pallas_histogram_counts_each_pixel_once": "64-80-3",
    "tests/catalog/test_mix.py::test_same_key_same_output_other_key_other_output": "config1-batch",
    "tests/catalog/test_mix.py::test_sample_then_apply_is_the_call_bitwise": "config1-batch-float32",  # noqa: E501
    "tests/catalog/test_mosaic.py::test_matches_the_numpy_reference": "size1-float32",
    "tests/catalog/test_pallas_forms.py::test_the_elastic_kernel_interpreted_gives_the_xla_pixels": "10-12-1-fill1-nearest",  # noqa: E501
    "tests/catalog/test_pallas_forms.py::test_the_sample_kernel_interpreted_gives_the_xla_pixels": "10-12-10-12-1-None-bilinear",  # noqa: E501
    "tests/catalog/test_photometric_distort.py::test_the_cpu_branch_form_gives_the_select_forms_bits": "hw1",  # noqa: E501
    "tests/catalog/test_ragged_arrays.py::test_resize_matches_torchvision": "nearest-size1-None",
    "tests/catalog/test_references.py::test_pil_convention_sample_apply_is_the_call": "shear_y-params1",  # noqa: E501
    "tests/catalog/test_references.py::test_timm_table_entries_follow_timm": "ShearY-True",
    "tests/catalog/test_taps.py::test_a_motion_line_has_at_most_three_cells_per_row_or_column": "7",
    "tests/catalog/test_tone.py::test_apply_takes_exact_values_per_sample": "posterize-bits-6.0-float32",  # noqa: E501
    "tests/catalog/test_tone.py::test_sample_then_apply_is_the_call_bitwise": "autocontrast-float32",  # noqa: E501
    "tests/clips/test_clips.py::test_identical_frames_give_the_image_output": "flip",
    "tests/clips/test_clips_dali.py::test_dali_sequences_with_targets_equal_arrays": "False",
    "tests/clips/test_clips_video.py::test_video_reader_sequences_equal_arrays": "True",
    "tests/compose/test_boundaries.py::test_boundaries_change_no_value": "flip+normalize",
    "tests/compose/test_boundaries.py::test_cheap_producers_are_left_to_fusion": "brightness+normalize",  # noqa: E501
    "tests/compose/test_boundaries.py::test_random_erasing_selects_over_rows_of_values": "const",
    "tests/compose/test_pair_parts.py::test_a_chain_into_cutmix_runs_the_loops_of_its_parts": "vflip",  # noqa: E501
    "tests/compose/test_policies.py::test_policy_fill_is_a_fraction_for_both_dtypes": "<lambda>-None",  # noqa: E501
    "tests/compose/test_policy_compact.py::test_the_shares_bound_every_layers_frequencies": "ra-p",
    "tests/compose/test_policy_families.py::test_drawn_plans_equal_the_ops_alone": "families-aa-imagenet-uint8",  # noqa: E501
    "tests/compose/test_policy_families.py::test_every_entry_equals_the_op_alone": "auto-ra-pack-op-uint8",  # noqa: E501
    "tests/core/test_params.py::test_matrix_maps_a_pixel_where_the_op_moves_it": "rot90-{'k': 1}-{}",  # noqa: E501
    "tests/core/test_warp_declaration.py::test_an_op_declared_by_its_geometry_passes_the_geometry_check": "forward",  # noqa: E501
    "tests/dali/test_after_iterator.py::test_same_bits_as_the_operator_in_the_pipeline": "3",
    "tests/interop/test_from_torchvision.py::test_deterministic_transforms_match_torchvision": "Compose-ToImage-ToDtype",  # noqa: E501
    "tests/interop/test_from_torchvision.py::test_policies_convert_to_augjax_policies": "AutoAugment",  # noqa: E501
    "tests/interop/test_from_torchvision.py::test_trivial_augment_wide_replays_torchvisions_choices": "4",  # noqa: E501
    "tests/plugins/test_import_timeout.py::test_a_plugin_that_never_returns_does_not_hang_the_cli_or_strict_mode": "list-all-load",  # noqa: E501
    "tests/reliability/test_alignment.py::test_mixing_op_labels_and_images_stay_with_their_sample": "cutmix-uint8-int",  # noqa: E501
    "tests/reliability/test_hostile.py::test_bad_labels_are_input_errors_before_anything_runs": "mixup",  # noqa: E501
    "tests/reliability/test_hostile.py::test_wrong_rank_dtype_channels_and_layout_are_input_errors": "to_float",  # noqa: E501
    "tests/reliability/test_numbers.py::test_a_non_finite_pixel_stays_in_its_sample_through_a_training_chain": "nan",  # noqa: E501
    "tests/reliability/test_reproducibility.py::test_prefetch_depth_does_not_change_the_batches": "3",  # noqa: E501
    "tests/runtime/test_call_program.py::test_the_fused_program_equals_apply_of_the_sampler_it_holds": "rotate",  # noqa: E501
    "tests/runtime/test_padding.py::test_warmup_compiles_the_size_it_is_given": "pad-1",
    "tests/runtime/test_ragged_targets.py::test_pixels_equal_the_padded_batch": "rrc_nearest-float32",  # noqa: E501
    "tests/runtime/test_ragged_targets.py::test_taps_moved_to_their_first_weight_read_the_same_bits": "float32",  # noqa: E501
    "tests/runtime/test_recurring_steady.py::test_a_recurring_size_runs_exactly_the_work_of_a_fresh_process": "stored-recurring-history1",  # noqa: E501
    "tests/targets/test_boxes.py::test_a_call_in_any_format_equals_the_xyxy_call": "cxcywhn-None",
    "tests/targets/test_boxes.py::test_boxes_in_a_format_against_torchvision": "CXCYWH",
    "tests/targets/test_boxes.py::test_sanitize_matches_torchvision": "3.0-20.0",
    "tests/targets/test_properties.py::test_a_box_encloses_its_moved_mask": "center_crop",
    "tests/targets/test_properties.py::test_mask_dtypes_ranks_and_fill": "uint8-255",
    "tests/targets/test_rotated_boxes.py::test_each_rotated_format_against_torchvision": "cxcywhr",
    "tests/targets/test_torchvision.py::test_flip": "horizontal",
    "tests/targets/test_torchvision.py::test_shear": "x",
    "tests/targets/test_torchvision.py::test_translate": "x",
    "tests/targets/test_zoom_out.py::test_tiny_images_on_a_canvas_of_their_own_size_come_back": "nearest-float32-shape2",  # noqa: E501
}

LEFT_OUT = frozenset({
    "tests/catalog/test_affine_size.py::test_affine_size_is_affine_then_center_crop",
    "tests/catalog/test_contrib_ops.py::test_salt_and_pepper_matches_dali_statistics",
    "tests/catalog/test_copy_paste.py::test_box_only_and_target_free_calls",
    "tests/catalog/test_copy_paste.py::test_replay_same_key_labels_and_p0",
    "tests/catalog/test_erase.py::test_const_mode_fills_the_mean_or_the_given_fill",
    "tests/catalog/test_jpeg.py::test_equals_pillow_any_size",
    "tests/catalog/test_jpeg.py::test_equals_pillow_on_a_photo",
    "tests/catalog/test_jpeg.py::test_float_images_go_through_8_bit_levels",
    "tests/catalog/test_jpeg.py::test_op_draws_a_whole_quality_per_sample_and_applies_it",
    "tests/catalog/test_mosaic.py::test_in_a_chain_after_a_flip_and_with_min_visibility",
    "tests/catalog/test_pallas_forms.py::test_remap_and_the_separable_blur_take_the_kernels_for_cuda",  # noqa: E501
    "tests/catalog/test_pallas_forms.py::test_the_correlate_kernels_interpreted_give_the_xla_sums",
    "tests/catalog/test_photometric_distort.py::test_apply_equals_torchvision_transform_with_the_same_params",  # noqa: E501
    "tests/catalog/test_ragged_arrays.py::test_a_chain_starting_with_a_crop_takes_a_list",
    "tests/catalog/test_ragged_arrays.py::test_resize_to_a_size_on_a_list_returns_one_batch",
    "tests/catalog/test_ragged_arrays.py::test_rrc_on_a_list_matches_torchvision_and_the_single_image_path[float32]",  # noqa: E501
    "tests/catalog/test_ragged_arrays.py::test_timm_eval_transform_on_a_list_matches_torchvision",
    "tests/catalog/test_references.py::test_pil_convention_matches_timm_uint8",
    "tests/catalog/test_taps.py::test_pallas_taps_kernel_matches_a_float64_sum",
    "tests/cli/test_demo.py::test_demo_writes_the_grid_and_the_summary",
    "tests/cli/test_show_structures.py::test_show_views",
    "tests/clips/test_clips.py::test_committed_and_uncommitted_clips_share_the_programs",
    "tests/clips/test_clips.py::test_fused_program_equals_two_programs",
    "tests/clips/test_clips.py::test_mixing_mixes_whole_clips",
    "tests/clips/test_clips.py::test_per_frame_draws_differ_and_replay",
    "tests/clips/test_clips.py::test_per_frame_policy",
    "tests/clips/test_clips.py::test_targets_follow_per_frame",
    "tests/clips/test_clips_dali.py::test_dali_sequences_equal_arrays",
    "tests/compose/test_chain.py::test_chain_equals_ops_one_at_a_time_bitwise",
    "tests/compose/test_chain.py::test_dali_chain_is_one_crossing_and_equals_arrays",
    "tests/compose/test_chain.py::test_labels_cross_only_with_a_mixing_op",
    "tests/compose/test_chain.py::test_random_choice_per_sample_branches_and_weights",
    "tests/compose/test_layer_kernel.py::test_a_host_with_a_gpu_traces_both_forms_and_runs_the_cpu_one[ra-torchvision]",  # noqa: E501
    "tests/compose/test_layer_kernel.py::test_a_mixed_batch_through_the_kernels_is_the_switch[aa-imagenet]",  # noqa: E501
    "tests/compose/test_layer_kernel.py::test_each_entry_through_the_kernels_is_the_op_alone",
    "tests/compose/test_layer_kernel.py::test_pil_rotate_exact_paths_through_the_kernels[square]",
    "tests/compose/test_layer_kernel.py::test_small_and_one_channel_images_through_the_kernels",
    "tests/compose/test_layer_kernel.py::test_without_tritons_histogram_the_layer_counts_with_xla",
    "tests/compose/test_pair_parts.py::test_each_op_alone_draws_what_it_draws_in_the_chain",
    "tests/compose/test_pair_parts.py::test_own_draws_are_another_draw",
    "tests/compose/test_policies.py::test_a_registered_op_joins_rand_augment_by_its_registered_name",
    "tests/compose/test_policies.py::test_no_recompilation_after_warmup",
    "tests/compose/test_policy_compact.py::test_an_overflowing_batch_takes_the_whole_batch_path[aa-imagenet]",  # noqa: E501
    "tests/compose/test_policy_compact.py::test_compacted_layers_equal_the_whole_batch_layers",
    "tests/compose/test_policy_families.py::test_a_layer_costs_one_op_per_family",
    "tests/compose/test_policy_families.py::test_the_switch_reference_gives_the_same_uint8_pixels[ra-pack-op]",  # noqa: E501
    "tests/core/test_params.py::test_chain_sample_apply_edit_replay",
    "tests/core/test_params.py::test_composites_record_their_decisions_and_children",
    "tests/core/test_randomness.py::test_per_op_seed_pins_that_ops_stream",
    "tests/core/test_steps.py::test_a_composite_of_one_op_answers_as_the_op",
    "tests/core/test_steps.py::test_a_policy_runs_by_its_members",
    "tests/dali/test_after_iterator.py::test_prefetch_pulls_ahead_of_the_consumer",
    "tests/dali/test_ragged.py::test_chain_after_a_ragged_crop_replays_on_arrays",
    "tests/dali/test_ragged.py::test_docs_page_runs",
    "tests/dali/test_ragged.py::test_targets_follow_a_ragged_crop",
    "tests/dali/test_ragged.py::test_targets_replay_on_a_list_of_arrays",
    "tests/examples/test_examples.py::test_detection_batches_uniform_with_boxes_inside",
    "tests/examples/test_examples.py::test_detection_reproducible_with_a_seed",
    "tests/examples/test_pytorch_example.py::test_trim_epoch_cuts_the_pytorch_iterators_last_batch_like_partial",  # noqa: E501
    "tests/examples/test_ssl_views.py::test_dino_step_on_dali_views",
    "tests/examples/test_ssl_views.py::test_simclr_on_arrays_main",
    "tests/grain/test_grain.py::test_batch_augment_does_not_depend_on_batch_boundaries",
    "tests/grain/test_grain.py::test_random_map_equals_the_call_on_arrays_for_every_seed",
    "tests/grain/test_grain.py::test_random_map_uses_grains_generator_as_the_sample_key",
    "tests/grain/test_grain.py::test_shards_by_grains_sharding_give_the_unsharded_records",
    "tests/interop/test_from_torchvision.py::test_rand_augment_replays_torchvisions_choices",
    "tests/plugins/test_pack_tools.py::test_list_all_load_reports_a_pack_whose_module_fails_to_import",  # noqa: E501
    "tests/plugins/test_packs_doc.py::test_the_printed_geometric_pack_passes_the_kit_and_its_own_test",  # noqa: E501
    "tests/reliability/test_alignment.py::test_chain_of_sample_ops_keeps_samples_aligned",
    "tests/reliability/test_batch_history.py::test_a_chain_given_one_key_per_sample_does_not_depend_on_earlier_batch_sizes",  # noqa: E501
    "tests/reliability/test_batch_history.py::test_any_history_and_policy_gives_the_batch_alone",
    "tests/reliability/test_batch_history.py::test_chains_and_policies_do_not_depend_on_earlier_batch_sizes",  # noqa: E501
    "tests/reliability/test_batch_history.py::test_dali_cpu_pipeline_does_not_depend_on_earlier_batch_sizes",  # noqa: E501
    "tests/reliability/test_batch_history.py::test_op_output_does_not_depend_on_earlier_batch_sizes[mixup_cutmix-batch]",  # noqa: E501
    "tests/reliability/test_batch_history.py::test_op_output_does_not_depend_on_earlier_batch_sizes[mixup_cutmix-elem]",  # noqa: E501
    "tests/reliability/test_batch_history.py::test_op_output_does_not_depend_on_earlier_batch_sizes[mixup_cutmix-pair]",  # noqa: E501
    "tests/reliability/test_batch_history.py::test_op_output_does_not_depend_on_earlier_batch_sizes[random_resized_crop]",  # noqa: E501
    "tests/reliability/test_hostile.py::test_mixing_op_properties_over_shapes_dtypes_and_params[mixup_cutmix-float32-CHW]",  # noqa: E501
    "tests/reliability/test_numbers.py::test_the_deepest_config_read_also_runs",
    "tests/runtime/test_call_program.py::test_calls_on_the_cpu_run_the_two_programs",
    "tests/runtime/test_call_program.py::test_samplers_that_draw_fields_compile_optimised_on_the_cpu",  # noqa: E501
    "tests/runtime/test_call_program.py::test_seeds_give_the_keys_of_keys_from_seeds_in_the_fused_program",  # noqa: E501
    "tests/runtime/test_compile_cache.py::test_default_directory_is_the_user_cache_dir_and_small_programs_are_cached",  # noqa: E501
    "tests/runtime/test_dispatch.py::test_one_key_gives_the_pixels_of_its_split_keys_whole_and_padded",  # noqa: E501
    "tests/runtime/test_padding.py::test_mixing_chain_padded_matches_unpadded[6]",
    "tests/runtime/test_padding.py::test_mixing_per_sample_mode_runs_its_own_program_and_pairs_only_real_samples",  # noqa: E501
    "tests/runtime/test_program_store.py::test_an_edited_kernel_file_traces_afresh_and_another_value_does_not",  # noqa: E501
    "tests/runtime/test_ragged_targets.py::test_a_second_list_of_other_sizes_compiles_nothing",
    "tests/runtime/test_ragged_targets.py::test_boxes_follow_the_drawn_window",
    "tests/runtime/test_ragged_targets.py::test_padded_boxes_with_counts_and_keypoint_groups_are_taken",  # noqa: E501
    "tests/runtime/test_ragged_targets.py::test_taps_moved_to_their_first_weight_keep_their_terms",
    "tests/runtime/test_ragged_targets.py::test_targets_on_a_list_equal_each_image_alone",
    "tests/runtime/test_ragged_targets.py::test_the_cpu_read_by_image_gives_every_taps_bits",
    "tests/runtime/test_traced_values.py::test_a_magnitude_schedule_compiles_nothing_after_the_first_epoch",  # noqa: E501
    "tests/runtime/test_traced_values.py::test_eight_values_of_posterize_bits_compile_nothing_after_the_first",  # noqa: E501
    "tests/runtime/test_traced_values.py::test_random_apply_p_and_its_ops_values_compile_nothing_after_the_first",  # noqa: E501
    "tests/runtime/test_traced_values.py::test_ten_values_of_brightness_factor_compile_nothing_after_the_first",  # noqa: E501
    "tests/runtime/test_traced_values.py::test_ten_values_of_flip_p_compile_nothing_after_the_first",  # noqa: E501
    "tests/targets/test_boxes.py::test_clips_take_box_formats_and_sanitize",
    "tests/targets/test_boxes.py::test_dali_cpu_pipeline_equals_the_arrays_path",
    "tests/targets/test_boxes.py::test_dali_ragged_images_take_grouped_keypoints_and_refuse_other_box_formats",  # noqa: E501
    "tests/targets/test_boxes.py::test_grouped_keypoints_follow_as_flat_ones_and_leave_invisible",
    "tests/targets/test_boxes.py::test_the_default_rule_is_todays_rule_bitwise",
    "tests/targets/test_iou_crop.py::test_a_call_equals_sample_then_apply_and_calls_without_valid_boxes",  # noqa: E501
    "tests/targets/test_iou_crop.py::test_apply_equals_torchvision_crop_then_resize_with_the_same_box",  # noqa: E501
    "tests/targets/test_iou_crop.py::test_dali_cpu_pipeline_equals_the_arrays_path",
    "tests/targets/test_iou_crop.py::test_every_output_satisfies_the_iou_it_chose",
    "tests/targets/test_iou_crop.py::test_the_box_equals_torchvisions_for_the_same_draws",
    "tests/targets/test_iou_crop.py::test_the_cpu_branch_form_gives_every_taps_bits",
    "tests/targets/test_properties.py::test_box_counts_and_validity_pass_through",
    "tests/targets/test_properties.py::test_chain_equals_its_ops_in_sequence_and_replays",
    "tests/targets/test_rotated_boxes.py::test_a_chain_moves_rotated_boxes_op_by_op",
    "tests/targets/test_rotated_boxes.py::test_clips_take_rotated_boxes",
    "tests/targets/test_rotated_boxes.py::test_dali_cpu_pipeline_equals_the_arrays_path",
    "tests/targets/test_rotated_boxes.py::test_every_geometric_op_moves_rotated_boxes_as_torchvision",  # noqa: E501
    "tests/targets/test_rotated_boxes.py::test_flips_keep_areas_and_twice_is_the_identity",
    "tests/targets/test_rotated_boxes.py::test_sanitize_rules_on_rotated_boxes",
    "tests/targets/test_torchvision.py::test_affine",
    "tests/targets/test_torchvision.py::test_perspective",
    "tests/targets/test_torchvision.py::test_random_resized_crop",
    "tests/targets/test_zoom_out.py::test_apply_equals_torchvision_pad_then_resize",
    "tests/targets/test_zoom_out.py::test_the_cpu_branch_form_gives_every_taps_bits",
    "tests/views/test_structures_store.py::test_a_warm_process_runs_views_and_clips_without_tracing",  # noqa: E501
    "tests/views/test_views.py::test_dino_recipe_probabilities",
    "tests/views/test_views.py::test_each_view_is_its_step_alone_with_the_documented_key",
    "tests/views/test_views.py::test_inside_jit_equals_call",
    "tests/views/test_views.py::test_replay_from_params_bitwise",
    "tests/views/test_views.py::test_shapes_and_dtype",
    "tests/views/test_views_dali.py::test_dali_views_equal_arrays",
})
