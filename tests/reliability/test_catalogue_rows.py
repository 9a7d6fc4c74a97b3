"""docs/errors.md and the hostile-input tests say the same thing (issue 20, item 5).

The catalogue is the promise ("every case below gets one line"), the tests are its proof. Before,
nothing tied them: a row could lose its test, a table case could lose its row, and a documented
message could drift from what the command prints. Here every row's case id must name a test, either
a case of one of the parametrized tables (`CASES`, `DATA_CASES`, `ARGUMENT_CASES`, `STUDY_CASES`,
`MODEL_CASES`, `REFUSED_BEFORE_WRITING`) or a
test function listed in `NAMED`; every table case must have a row; and a table case's row must show
the command the test runs and a message its pattern matches.

Every command of `encoderlab` is also classified by what it writes (`WRITES`), so a new command
cannot skip `encoderlab/outdir.py` unnoticed: each that writes a folder or a file names the catalogue
row proving it refuses someone else's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.reliability.argument_cases import ARGUMENT_CASES
from tests.reliability.errors_doc import doc_rows
from tests.reliability.input_cases import CASES
from tests.reliability.test_hostile_data import DATA_CASES
from tests.reliability.test_hostile_models import MODEL_CASES
from tests.reliability.test_hostile_pretrain import REFUSED_BEFORE_WRITING
from tests.reliability.test_hostile_study_files import STUDY_CASES

from encoderlab.cli import COMMANDS

ROOT = Path(__file__).parents[2]

# Rows proved by a test of their own rather than a table case: case id -> "module::function".
NAMED = {
    "task-file-label-ids-beside-train-names": "tests.eval.test_custom_label_kinds::test_a_split_of_class_ids_beside_train_names_is_told_to_use_one_form",
    "study-folder-missing": "tests.study.test_study_cli_wording::test_a_study_folder_that_does_not_exist_is_said_so_with_the_one_it_is_near",
    "study-file-named-as-built-in": "tests.study.test_study_cli_wording::test_a_missing_study_file_named_as_a_built_in_study_says_to_name_it_alone",
    "study-node-disk-full": "tests.study.test_node_disk_full::test_a_full_disk_in_a_node_is_one_line_naming_the_node_and_leaves_it_unfinished",
    "source-text-field-empty": "tests.data.test_sources::test_an_empty_text_field_is_refused_where_the_source_is_read",
    "parquet-two-text-columns": "tests.data.test_sources::test_a_parquet_file_with_two_text_columns_is_one_line",
    "parquet-not-utf8": "tests.data.test_parquet_not_utf8::test_a_parquet_text_cell_that_is_not_utf8_is_one_line_naming_the_row",
    "pretty-printed-json-corpus": "tests.data.test_sources::test_a_pretty_printed_json_object_is_refused_with_the_command_that_converts_it",
    "corpus-holds-an-encoderlab-folder": "tests.data.test_sources::test_a_folder_encoderlab_wrote_inside_a_corpus_folder_is_refused_and_writes_nothing",
    "prepare-shard-into-link-to-nothing": "tests.data.test_merge_refusals::test_a_sharded_prepare_into_a_link_to_nothing_is_refused_and_writes_nothing",
    "corpus-holds-a-tokenizer-folder": "tests.data.test_filekinds::test_a_tokenizer_folder_another_tool_saved_inside_a_corpus_folder_is_refused",
    "source-is-prepared-data": "tests.data.test_filekinds::test_a_prepared_folder_given_as_a_source_names_how_it_is_used",
    "prepare-by-older-txt-reading": "tests.data.test_txt_reading::test_a_folder_prepared_by_older_txt_reading_of_a_file_with_a_cr_is_refused",
    "source-text-field-path-stops": "tests.data.test_fieldpath::test_a_dotted_text_field_that_stops_is_one_line_naming_the_field_there",
    "corpus-symlink-to-nothing": "tests.data.test_prepare_skipped::test_a_symlink_to_nothing_in_a_folder_is_refused_or_skipped_and_then_no_change",
    "stray-rank-without-world-size": "tests.train.test_stray_rank_env::test_a_dry_run_with_a_stray_rank_says_why_it_prints_nothing",
    "srun-tasks-without-torchrun": "tests.train.test_srun_tasks::test_the_refusal_is_said_by_task_zero_alone",
    "existing-run-under-torchrun-restart": "tests.train.test_elastic_restart::test_a_restarted_start_without_resume_says_the_torchrun_command_needs_it",
    "world-size-below-one": "tests.train.test_stray_rank_env::test_a_world_size_below_one_is_one_line_before_anything_is_written",
    "master-port-taken": "tests.train.test_master_port_taken::test_rank_zero_whose_master_port_is_taken_is_one_line_before_anything_is_written",
    "master-port-not-rank-zero": "tests.train.test_launch_meeting::test_a_rank_whose_master_port_is_another_jobs_says_so_in_one_line",
    "world-size-differs": "tests.train.test_launch_meeting::test_ranks_started_with_different_world_sizes_each_refuse_in_one_line_before_anything_is_written",
    "rank-taken-twice": "tests.train.test_rank_taken_twice::test_a_rank_that_comes_twice_while_rank_zero_waits_is_refused_by_rank_zero_and_the_duplicate",
    "world-size-not-running": "tests.train.test_world_size_layout::test_a_layout_for_two_processes_run_by_one_names_the_grad_accum_that_keeps_its_batch",
    "resume-at-another-world-size": "tests.train.test_pretrain_cli::test_a_resume_at_another_world_size_names_the_grad_accum_that_keeps_the_batch",
    "init-file-unreadable": "tests.train.test_init_identity::test_an_unreadable_file_the_load_reads_is_refused_in_one_line_before_anything_is_written",
    "init-version-unknown": "tests.train.test_init_identity::test_a_checkpoint_of_an_init_version_this_encoderlab_does_not_know_is_refused_naming_it",
    "study-corpus-bad-line-late": "tests.study.test_corpus_bad_line_late::test_a_bad_line_late_in_a_corpus_is_one_line_and_no_study_folder",
    "study-model-file-unreadable": "tests.study.test_local_model_keys::test_a_model_file_the_key_cannot_read_is_one_line_before_anything_is_written",
    "study-model-changed-while-running": "tests.study.test_local_model_recheck::test_a_model_replaced_after_the_graph_is_built_is_refused_before_it_is_loaded",
    "study-model-gone-while-running": "tests.study.test_local_model_recheck::test_a_model_folder_gone_after_the_graph_is_built_is_refused_naming_it",
    "study-cka-texts-changed-while-running": "tests.study.test_cka_texts_keys::test_a_texts_file_edited_while_the_study_runs_is_refused_and_nothing_is_scored",
    "study-cka-texts-gone-while-running": "tests.study.test_cka_texts_keys::test_a_texts_file_gone_while_the_study_runs_is_refused_naming_it",
    "init-unfinished-run": "tests.train.test_pretrain_cli::test_a_run_without_its_final_model_is_refused_as_a_start_model",
    "freeze-shared-layers": "tests.model.test_adapters_albert::test_freezing_some_of_albert_s_shared_layers_is_refused_before_the_run_writes",
    "transplant-shared-layers": "tests.analysis.test_adapted::test_a_transplant_of_some_of_albert_s_shared_layers_is_refused_and_writes_nothing",
    "albert-several-layers-per-group": "tests.model.test_adapters_albert::test_several_layers_per_group_are_refused_in_one_line",
    "tied-config-over-own-head": "tests.model.test_model_hub::test_a_tied_config_over_a_checkpoint_with_its_own_head_is_refused_and_writes_nothing",
    "out-in-encoderlab-artefact": "tests.reliability.test_out_in_artefacts::test_an_out_inside_an_encoderlab_artefact_is_refused_and_writes_nothing",
    "export-out-in-run-part": "tests.model.test_export::test_an_out_inside_a_runs_final_or_checkpoints_is_refused",
    "export-checkpoint-pruned-while-read": "tests.model.test_pruned_while_read::test_a_checkpoint_pruned_while_it_is_read_is_one_line_naming_the_newest",
    "eval-checkpoint-pruned-while-read": "tests.model.test_pruned_while_read::test_a_checkpoint_pruned_while_it_is_read_is_one_line_naming_the_newest",
    "analyze-model-without-tokenizer": "tests.analysis.test_broken_inputs::test_a_checkpoint_without_its_tokenizer_names_the_folder_the_tokenizer_goes_into",
    "analyze-texts-utf16-without-bom": "tests.analysis.test_broken_inputs::test_a_utf16_texts_file_is_one_line_naming_it_and_writes_nothing",
    "analyze-checkpoint-pruned-while-read": "tests.model.test_pruned_while_read::test_a_checkpoint_pruned_while_it_is_read_is_one_line_naming_the_newest",
    "eval-check-checkpoint-pruned-while-read": "tests.model.test_pruned_while_read::test_a_checkpoint_pruned_while_it_is_read_is_one_line_naming_the_newest",
    "study-cka-checkpoint-pruned-while-read": "tests.model.test_pruned_while_read::test_a_study_cka_nodes_start_model_pruned_while_it_is_read_is_one_line",
    "eval-out-in-hub-cache": "tests.eval.test_hub_start_commit::test_an_out_inside_a_hub_ids_cache_folder_is_refused_and_writes_nothing",
    "eval-out-in-hub-mirror": "tests.eval.test_eval_out_in_mirror::test_an_out_inside_the_task_files_hub_mirror_is_refused_and_writes_nothing",
    "pretrain-out-in-hub-cache": "tests.train.test_start_commit::test_a_run_or_export_inside_its_hub_ids_cache_folder_is_refused_and_writes_nothing",
    "eval-check-model-without-weights": "tests.eval.test_eval_check::test_a_model_folder_without_its_weights_is_refused_by_check_in_the_runs_line",
    "eval-check-model-pickle-weights": "tests.eval.test_eval_check::test_check_gives_a_hugging_face_folders_weight_layout_the_runs_verdict",
    "mlm-start-model-without-mask-token": "tests.train.test_vocab::test_without_a_mask_token_to_add_mlm_refuses_a_decoder_naming_the_setting_that_adds_one",
    "probe-task-label-not-under-meta": "tests.analysis.test_probe::test_a_task_files_jsonl_given_as_a_probing_task_says_where_the_label_goes",
    "mask-token-is-a-special-token": "tests.train.test_vocab::test_a_mask_token_that_is_another_special_token_is_refused_before_the_run",
    "eval-check-embedding-rows": "tests.eval.test_eval_check::test_check_refuses_a_config_whose_vocab_size_the_weights_embedding_disagrees_with",
    "eval-check-vocab-mismatch": "tests.eval.test_eval_check::test_check_refuses_a_tokenizer_with_more_ids_than_the_embedding_in_the_runs_line",
    "eval-check-hf-config-refused": "tests.eval.test_eval_check::test_a_hugging_face_config_the_load_refuses_is_refused_by_check_in_the_runs_line",
    "eval-out-of-another-model": "tests.eval.test_eval_rerun::test_a_second_models_call_into_an_out_is_refused_before_writing",
    "eval-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_eval_and_analyze_refuse_an_out_inside_a_runs_final_or_checkpoints",
    "analyze-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_eval_and_analyze_refuse_an_out_inside_a_runs_final_or_checkpoints",
    "pretrain-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_every_writer_refuses_an_output_inside_a_runs_final_or_checkpoints",
    "data-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_every_writer_refuses_an_output_inside_a_runs_final_or_checkpoints",
    "advise-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_every_writer_refuses_an_output_inside_a_runs_final_or_checkpoints",
    "study-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_every_writer_refuses_an_output_inside_a_runs_final_or_checkpoints",
    "bench-out-in-run-part": "tests.model.test_outputs_in_run_parts::test_every_writer_refuses_an_output_inside_a_runs_final_or_checkpoints",
    "fine-tuned-task-model": "tests.model.test_model_hub::test_a_fine_tuned_classifier_is_refused_naming_the_fix_that_loads_its_body",
    "config-without-model-type": "tests.model.test_model_hub::test_a_config_without_model_type_names_the_family_its_architectures_say",
    "deberta-original-head-narrow-embedding": "tests.model.test_adapters_deberta::test_the_original_head_over_a_narrower_embedding_is_one_line_not_a_traceback",
    "hub-repo-without-safetensors": "tests.model.test_adapters_deberta_v1::test_export_of_the_hub_id_on_main_is_one_line_naming_the_conversion_and_writes_nothing",
    "hub-cache-blob-missing": "tests.model.test_hub_cache_blobs::test_a_command_reading_a_snapshot_whose_blob_is_gone_is_one_line_and_writes_nothing",
    "model-revision-not-cached": "tests.data.test_hub_offline_pins::test_a_command_reading_a_revision_the_cache_lacks_is_one_line_and_writes_nothing",
    "model-revision-malformed": "tests.data.test_hubmodels::test_a_malformed_revision_is_named_as_one_not_as_a_missing_path",
    "hub-dataset-not-found": "tests.eval.test_hub_server_datasets::test_a_hub_dataset_the_hub_refuses_is_one_line_naming_the_fix",
    "hub-dataset-gated": "tests.eval.test_hub_server_datasets::test_a_hub_dataset_the_hub_refuses_is_one_line_naming_the_fix",
    "hub-dataset-revision-not-found": "tests.eval.test_hub_server_datasets::test_a_hub_dataset_the_hub_refuses_is_one_line_naming_the_fix",
    "hub-dataset-down-mid-download": "tests.eval.test_hub_server_datasets::test_a_hub_that_stops_answering_mid_download_is_one_line_then_offline_the_cut_snapshot_too",
    "hub-dataset-unreachable": "tests.eval.test_hub_down_datasets::test_an_uncached_hub_dataset_with_the_hub_down_is_one_line_after_one_attempt",
    "hub-model-revision-not-found": "tests.data.test_hubmodels::test_a_revision_the_hub_lacks_is_one_line_and_writes_nothing",
    "hub-model-unanswered": "tests.data.test_hub_down_models::test_an_uncached_model_with_the_hub_silent_is_one_line_naming_the_hub_after_one_request",
    "model-mirror-pin-other-commit": "tests.data.test_hubmodels::test_a_mirror_pin_of_another_commit_is_refused_and_writes_nothing",
    "model-mirror-pin-unverifiable": "tests.data.test_hubmodels::test_a_mirror_pin_that_cannot_be_checked_is_refused_and_writes_nothing",
    "model-mirror-pin-branch": "tests.data.test_hubmodels::test_a_mirror_pin_that_cannot_be_checked_is_refused_and_writes_nothing",
    "tokenizer-json-without-config": "tests.data.test_slow_vocabularies::test_a_tokenizer_json_without_its_config_is_refused_where_its_class_adds_specials",
    "tokenizer-sentencepiece-missing": "tests.data.test_slow_vocabularies::test_without_the_sentencepiece_package_it_is_one_line",
    "task-max-length-over-positions": "tests.eval.test_task_positions::test_a_task_file_longer_than_our_models_positions_is_refused_by_the_run_and_the_check",
    "task-file-is-a-data-file": "tests.eval.test_task_file_mistakes::test_a_data_file_named_as_the_task_file_says_so",
    "task-file-is-a-study-file": "tests.eval.test_task_file_mistakes::test_a_study_file_given_as_a_task_file_says_it_is_a_study_file",
    "study-file-is-a-task-file": "tests.study.test_files::test_a_task_file_given_as_the_study_says_it_is_a_task_file",
    "study-file-is-a-data-file": "tests.study.test_study_file_is_data::test_a_data_file_given_as_the_study_says_it_is_a_data_file",
    "task-file-text-column-as-label": "tests.eval.test_task_file_mistakes::test_a_text_column_named_as_the_label_is_refused_as_one_class_per_row",
    "task-file-labels-under-options": "tests.eval.test_task_file_mistakes::test_labels_under_options_are_refused_not_replaced_by_the_datas",
    "task-file-template-under-options": "tests.eval.test_task_file_mistakes::test_a_template_under_options_is_refused_and_options_list_neither_as_valid",
    "task-file-pair-template-missing": "tests.eval.test_custom_tasks::test_bad_specs_are_one_line_errors",
    "task-file-template-not-pair": "tests.eval.test_custom_tasks::test_bad_specs_are_one_line_errors",
    "task-file-hub-is-a-local-folder": "tests.eval.test_task_file_paths::test_a_local_folder_given_as_data_hub_names_the_task_file_and_the_ways_to_read_it",
    "task-file-regression-targets-alike": "tests.eval.test_task_file_cells::test_a_regression_split_whose_targets_are_all_alike_is_refused_when_read",
    "task-file-iob1-under-entity-f1": "tests.eval.test_task_file_cells::test_iob1_tags_scored_by_strict_entity_f1_are_refused_with_both_fixes",
    "task-file-label-end-spaces": "tests.eval.test_task_file_mistakes::test_label_names_that_differ_only_in_end_spaces_are_refused_without_labels",
    "task-file-jsonl-line-not-json": "tests.eval.test_task_localfiles::test_a_jsonl_line_that_is_not_json_is_named_by_its_line",
    "merge-val-fraction-holds-out-everything": "tests.data.test_merge::test_a_val_fraction_that_holds_out_every_document_is_refused_by_merge_before_writing",
    "recipe-tokens-under-warmup": "tests.train.test_recipes::test_tokens_too_few_for_the_detours_warmup_name_a_fix_the_recipe_takes",
    "pretrain-steps-overflow": "tests.train.test_recipes::test_a_run_of_more_rows_than_int64_counts_names_its_steps",
    "source-option-location": "tests.data.test_sources::test_source_options_list_exactly_what_is_accepted_and_refuse_location_and_repeats",
    "source-option-twice": "tests.data.test_sources::test_source_options_list_exactly_what_is_accepted_and_refuse_location_and_repeats",
    "corpus-subfolder-unlistable": "tests.data.test_sources::test_a_corpus_subfolder_that_cannot_be_listed_is_refused_naming_it",
    "tokenizer-rerun-same-arguments": "tests.data.test_tokenizer::test_a_rerun_with_the_same_arguments_is_done_and_with_others_refused",
    "tokenizer-rerun-sources-changed": "tests.data.test_tokenizer::test_a_rerun_with_the_same_arguments_is_done_and_with_others_refused",
    "study-corpus-file-read-twice": "tests.study.test_corpus_field_hint::test_a_file_read_by_two_entries_is_refused_in_the_study_files_terms_before_anything_is_written",
    "study-corpus-folder-without-text-files": "tests.study.test_corpus_field_hint::test_a_corpus_entry_holding_no_text_file_names_the_entry_in_its_fix",
    "decontaminate-folder-without-text-files": "tests.data.test_decontaminate::test_an_evaluation_folder_without_text_files_names_decontaminate_in_its_fix",
    "task-file-label-case": "tests.eval.test_task_file_mistakes::test_label_names_that_differ_only_in_case_are_refused_without_labels",
    "task-file-path-from-working-directory": "tests.eval.test_task_file_paths::test_a_task_files_data_path_written_from_the_working_directory_names_the_rule_and_the_path",
    "eval-results-score-not-a-number": "tests.eval.test_non_finite_scores::test_a_non_finite_score_is_refused_naming_the_file_line_and_fix",
    "report-eval-score-not-a-number": "tests.study.test_non_finite_study_scores::test_a_nan_score_in_a_finished_eval_node_is_refused_naming_its_node_json",
    "eval-results-split-missing": "tests.eval.test_non_finite_scores::test_a_test_split_dropped_from_one_seeds_line_is_refused_naming_the_line_and_split",
    "report-eval-split-missing": "tests.study.test_non_finite_study_scores::test_a_test_split_dropped_from_a_finished_eval_node_is_refused_naming_its_node_json",
    "report-cka-number-not-finite": "tests.study.test_non_finite_study_scores::test_a_non_finite_number_in_a_finished_cka_node_is_refused_naming_its_node_json",
    "report-compute-count-not-finite": "tests.study.test_non_finite_study_scores::test_a_non_finite_compute_count_is_refused_naming_its_node_json",
    "study-task-without-mirror": "tests.reliability.test_hostile_study_files::test_a_study_whose_task_has_no_hub_mirror_is_refused_before_anything_is_written",
    "study-shape-ignored-by-recipe": "tests.study.test_untestable_settings::test_a_study_shape_a_smoke_recipe_takes_none_of_is_refused_before_anything_is_written",
    "study-init-empty": "tests.study.test_untestable_settings::test_an_empty_init_or_tokenizer_is_one_line",
    "study-tokenizer-empty": "tests.study.test_untestable_settings::test_an_empty_init_or_tokenizer_is_one_line",
    "study-claim-faster-early-untestable": "tests.study.test_untestable_settings::test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written",
    "study-claim-cka-untestable": "tests.study.test_untestable_settings::test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written",
    "study-claim-cka-without-noise": "tests.study.test_untestable_settings::test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written",
    "report-inside-a-study": "tests.study.test_report_inside_a_study::test_a_folder_inside_a_study_folder_names_the_study_folder",
    "study-start-run-name-in-other-case": "tests.study.test_start_typo_case::test_a_start_model_near_a_run_name_is_refused_naming_the_run",
    "study-start-near-a-run": "tests.study.test_start_typo_case::test_a_start_model_near_a_run_name_is_refused_naming_the_run",
    "study-claim-unevaluated-run": "tests.study.test_untestable_settings::test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written",
    "study-claim-stability-one-lr": "tests.study.test_untestable_settings::test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written",
    "study-claim-family-not-evaluated": "tests.study.test_untestable_settings::test_a_claim_the_study_can_never_test_is_refused_before_anything_is_written",
    "study-claim-family-not-in-task-files": "tests.study.test_untestable_settings::test_a_claim_on_a_family_no_task_file_gives_is_refused_before_anything_is_written",
    "study-override-seed-negative": "tests.study.test_untestable_settings::test_a_bad_override_names_the_study_files_key_not_a_flag",
    "study-override-seed-negative-past-a-run": "tests.study.test_untestable_settings::test_a_bad_override_names_the_study_files_key_not_a_flag",
    "study-override-lr-nan": "tests.study.test_untestable_settings::test_a_bad_override_names_the_study_files_key_not_a_flag",
    "study-hub-id-not-there": "tests.study.test_study_hub_ids::test_a_hub_id_the_hub_cannot_give_is_refused_naming_the_study_files_folder",
    "study-hub-start-moved": "tests.study.test_start_commits::test_a_resumed_study_whose_hub_start_moved_is_refused_before_anything_runs",
    "study-resume-shadowed-hub-id": "tests.study.test_resumed_hub_ids::test_a_resumed_study_refuses_a_hub_id_the_working_folder_now_shadows",
    "study-builtin-shadowed-hub-id": "tests.study.test_builtin_hub_ids::test_a_builtins_first_run_refuses_a_hub_id_the_working_folder_shadows",
    "study-cuda-not-visible": "tests.reliability.test_hostile_study_files::test_a_study_on_cuda_where_none_is_visible_is_refused_before_anything_is_written",
    "unusable-output": "tests.reliability.test_hostile_inputs::test_unusable_output_folder_is_one_line",
    "disk-full": "tests.reliability.test_hostile_inputs::test_disk_full_mid_run_keeps_the_last_checkpoint_and_resumes",
    "mlm-without-mask-token": "tests.reliability.test_hostile_inputs::test_mlm_with_a_tokenizer_without_mask_token",
    "pretrain-out-uncreatable-parent": "tests.reliability.test_hostile_inputs::test_out_under_a_parent_that_cannot_be_made_is_one_line",
    "empty-hub-mirror-split": "tests.reliability.test_hostile_inputs::test_empty_hub_mirror_split_is_one_line_after_the_progress_bar",
    "encoderlab-home-is-a-file": "tests.reliability.test_hostile_data::test_encoderlab_home_that_is_a_file_is_one_line",
    "encoderlab-home-empty": "tests.reliability.test_hostile_data::test_an_empty_encoderlab_home_is_one_line_not_the_working_folder",
    "encoderlab-home-broken-symlink": "tests.reliability.test_hostile_data::test_an_encoderlab_home_that_is_a_broken_symlink_is_one_line",
    "out-is-the-current-folder": "tests.reliability.test_hostile_arguments::test_an_out_without_a_name_of_its_own_is_one_line",
    "eval-lr-times-weight-decay": "tests.study.test_finetune_decay::test_eval_refuses_an_lr_past_one_over_a_task_files_weight_decay",
    "study-lr-times-weight-decay": "tests.study.test_finetune_decay::test_a_study_refuses_its_lrs_over_a_task_files_weight_decay_before_anything_runs",
    "study-resume-task-file-moved": "tests.study.test_task_files_moved::test_a_node_still_to_run_that_reads_the_moved_task_file_is_refused_before_anything_is_written",
    "study-resume-some-task-files-moved": "tests.study.test_task_files_moved::test_with_only_some_task_files_gone_none_is_taken_from_the_record_and_the_resume_is_refused",
    "study-resume-prepared-moved": "tests.study.test_task_files_moved::test_a_finished_study_resumes_with_its_prepared_folder_moved_and_one_to_run_is_refused",
    "study-over-a-changed-corpus": "tests.study.test_stale_corpus::test_a_study_rerun_over_a_corpus_edited_since_is_refused_before_anything_runs",
    "study-tokenizer-over-a-changed-corpus": "tests.study.test_stale_tokenizer::test_a_tokenizer_trained_before_an_interruption_is_not_reused_over_an_edited_corpus",
    "study-over-older-txt-reading": "tests.study.test_stale_corpus::test_a_study_over_a_corpus_an_older_encoderlab_read_otherwise_names_a_fix_that_helps",
    "study-cka-texts-fewer-than-n": "tests.study.test_cka_pool::test_a_study_cka_over_fewer_texts_than_its_n_texts_is_refused_before_anything_runs",
    "study-eval-max-length-over-positions": "tests.study.test_eval_lengths::test_a_study_task_longer_than_a_models_positions_is_refused_before_anything_is_written",
    "study-cka-max-length": "tests.study.test_cka_length::test_a_study_cka_length_beyond_a_start_models_positions_is_refused_before_anything_runs",
    "study-tokenizer-without-sources": "tests.study.test_stale_tokenizer::test_a_tokenizer_recording_no_sources_is_not_reused_for_data_not_prepared_yet",
    "study-tokenizer-damaged-sources": "tests.study.test_stale_tokenizer::test_a_tokenizer_whose_sources_json_is_damaged_says_so",
    "prepare-over-changed-sources": "tests.data.test_prepare_stale::test_a_prepare_over_sources_changed_since_is_refused_and_untouched",
    "prepare-at-another-revision": "tests.data.test_hub_revision::test_a_pinned_revision_is_read_recorded_and_another_is_refused",
    "mirror-pin-other-commit": "tests.data.test_mirror_pin::test_a_mirror_pin_of_another_commit_is_refused_before_anything_is_written",
    "mirror-pin-unverifiable": "tests.data.test_mirror_pin::test_a_mirror_pin_that_cannot_be_checked_is_refused_before_anything_is_written",
    "mirror-pin-branch": "tests.data.test_mirror_pin::test_a_mirror_pin_that_cannot_be_checked_is_refused_before_anything_is_written",
    "merge-of-a-stale-part": "tests.data.test_prepare_stale::test_merge_refuses_a_part_of_changed_sources",
    "merge-of-mirror-parts-of-two-commits": "tests.data.test_mirror_commit_merge::test_unpinned_mirror_parts_of_two_commits_are_refused",
    "merge-of-an-unrecorded-mirror-part": "tests.data.test_mirror_pin_recorded::test_an_earlier_unpinned_mirror_part_without_its_mirror_is_refused_naming_why_and_the_fix",
    "merge-of-parts-of-other-hub-data": "tests.data.test_merge::test_parts_that_read_the_hub_data_at_another_revision_or_file_list_are_refused",
    "merge-over-a-stale-merge": "tests.data.test_prepare_stale::test_a_merge_over_a_merged_folder_of_changed_sources_gives_a_fix_that_works",
    "merge-over-another-recipe": "tests.data.test_prepare_stale::test_a_merge_over_a_merged_folder_of_another_recipe_gives_a_fix_that_works",
    "assets-cache-entry-not-fetched": "tests.data.test_assets_fetch::test_a_cache_entry_encoderlab_did_not_fetch_is_refused_and_untouched",
    "asset-changed-since-fetch": "tests.data.test_assets_fetch::test_a_command_reading_an_asset_whose_files_changed_says_it_is_damaged",
    "encoderlab-assets-is-a-file": "tests.reliability.test_hostile_data::test_a_file_where_encoderlab_home_keeps_its_assets_is_one_line",
    "hub-unreachable-tokenizer": "tests.reliability.test_hostile_data::test_an_unreachable_hub_is_one_line_at_once",
    "hub-unreachable-model": "tests.reliability.test_hostile_data::test_an_unreachable_hub_is_one_line_at_once",
    "hub-unreachable-dataset": "tests.reliability.test_hostile_data::test_an_unreachable_hub_is_one_line_at_once",
    "jsonl-nested-too-deep": "tests.reliability.test_hostile_data::test_a_jsonl_line_nested_thousands_deep_is_one_line_and_writes_nothing",
    "argument-not-utf8": "tests.reliability.test_hostile_arguments::test_an_argument_that_is_not_utf8_is_one_line_and_writes_nothing",
    "hub-without-datasets": "tests.reliability.test_hostile_data::test_hub_data_without_the_datasets_package_is_one_line",
    "pretrain-on-patched-ids": "tests.reliability.test_hostile_data::test_pretrain_on_ids_beyond_the_vocabulary_is_one_line_not_an_index_error",
    "pretrain-rows-longer-than-data": "tests.train.test_seq_len_knob::test_rows_longer_than_the_train_split_name_layout_seq_len",
    "prepared-with-cut-documents": "tests.data.test_encode::test_a_folder_prepared_with_cut_documents_is_refused_on_read_and_on_rerun",
    "tokenizer-1mb-line": "tests.data.test_tokenizer::test_a_megabyte_line_without_spaces_trains",
    "tokenizer-interrupted": "tests.data.test_tokenizer::test_ctrl_c_and_sigterm_stop_training_with_the_usual_line",
    "export-disk-full": "tests.reliability.test_output_folders::test_disk_full_during_export_is_exit_3_and_leaves_nothing",
    "headless-checkpoint-fingerprint": "tests.reliability.test_stable_fingerprint::test_an_interrupted_grid_over_a_headless_checkpoint_resumes",
    "copied-study-resumes": "tests.study.test_nodes::test_a_copied_study_resumes_its_unfinished_run",
    "analysis-max-length-only-special-tokens": "tests.analysis.test_commands::test_a_max_length_the_special_tokens_fill_is_refused",
    "transplant-embeddings-across-tokenizers": "tests.analysis.test_transplant_command::test_embeddings_or_head_between_two_tokenizers_are_refused",
    "transplant-over-a-sweep": "tests.analysis.test_transplant_command::test_a_single_transplant_and_a_sweep_never_share_an_out",
    "sweep-over-a-transplant": "tests.analysis.test_transplant_command::test_a_single_transplant_and_a_sweep_never_share_an_out",
    "transplant-probe-flags-without-probe-task": "tests.analysis.test_transplant_command::test_the_probes_flags_without_a_probe_task_are_refused_before_any_path",
    "foreign-out": "tests.reliability.test_hostile_pretrain::test_foreign_folder_is_refused_and_untouched",
    "out-inside-init-hub-model": "tests.reliability.test_hostile_pretrain::test_out_inside_an_init_model_named_by_hub_id_is_refused",
    "resume-beside-a-live-run": "tests.train.test_resume_beside_live_run::test_a_resume_beside_a_live_run_names_its_holder_before_reading_a_checkpoint_it_rotates",
    "two-runs-one-folder": "tests.reliability.test_hostile_pretrain::test_two_pretrains_on_one_folder_at_once_one_is_refused",
    "resume-lock-of-another-node": "tests.train.test_run_lock_lease::test_another_nodes_lock_within_its_lease_is_refused_naming_host_pid_and_the_lease",
    "resume-lock-of-a-node-of-the-same-name": "tests.train.test_run_lock_same_hostname::test_a_live_run_on_another_node_of_the_same_name_is_refused_not_taken_over",
    "peer-rank-died-mid-step": "tests.train.test_peer_death::test_a_rank_that_dies_mid_step_is_one_line_on_rank_zero_naming_it_and_the_resume",
    "until-step-behind": "tests.reliability.test_hostile_pretrain::test_until_step_that_is_not_ahead_of_the_run_is_refused",
    "resume-nothing": "tests.reliability.test_hostile_pretrain::test_resume_with_nothing_to_resume_says_so_and_starts",
    "moved-run-resumes": "tests.reliability.test_hostile_pretrain::test_a_moved_run_resumes_without_force",
    "resume-with-display-changes": "tests.reliability.test_hostile_pretrain::test_a_run_resumes_with_another_progress_bar_sinks_or_peak_without_force",
    "resume-with-checkpoint-or-validation-changes": "tests.train.test_pretrain_cli::test_a_resume_takes_checkpoint_and_validation_changes_and_names_them",
    "resume-finished-run": "tests.train.test_pretrain_cli::test_resuming_a_finished_run_changes_nothing_and_says_so",
    "data-path-unmerged-part": "tests.data.test_merge::test_training_on_one_part_of_an_unmerged_prepare_is_refused_naming_data_merge",
    "data-path-beside-the-config": "tests.train.test_pretrain_cli::test_a_relative_data_path_beside_the_config_or_in_the_run_folder_is_named_there",
    "resume-without-config-yaml": "tests.reliability.test_hostile_pretrain::test_resume_without_config_yaml_checks_the_checkpoints_config",
    "resume-on-another-tokenizer": "tests.reliability.test_hostile_pretrain::test_resume_on_data_prepared_again_with_another_tokenizer_is_refused",
    "decontaminate-text-field-missing": "tests.data.test_decontaminate::test_an_evaluation_file_without_the_text_field_names_a_fix_that_works",
    "decontaminate-set-without-text": "tests.data.test_decontaminate::test_an_evaluation_file_without_text_is_refused_before_anything_is_written",
    "empty-compressed-corpus": "tests.data.test_own_corpus::test_an_empty_compressed_shard_is_refused_or_skipped_not_read_as_an_empty_file",
    "corpus-utf16-without-bom": "tests.data.test_utf16_without_bom::test_data_prepare_refuses_it_in_one_line_and_writes_nothing",
    "merge-out-is-a-part": "tests.data.test_merge_refusals::test_a_merge_out_that_is_a_part_names_the_merge_of_its_folder",
    "val-fraction-holds-out-everything": "tests.data.test_prepare_skipped::test_a_val_fraction_that_holds_out_every_document_is_refused_and_leaves_nothing",
    "ngram-past-any-text": "tests.data.test_decontaminate::test_an_ngram_past_any_evaluation_text_is_refused_before_anything_is_written",
    "resume-on-data-prepared-again": "tests.reliability.test_hostile_resume_data::test_resume_on_data_prepared_again_from_other_text_is_refused",
    "resume-on-a-tokenizer-of-another-size": "tests.reliability.test_hostile_resume_data::test_resume_on_data_prepared_again_with_a_tokenizer_of_another_size_names_the_tokenizer",
    "resume-past-the-shortened-run": "tests.reliability.test_hostile_pretrain::test_a_forced_resume_past_the_shortened_run_is_refused_and_changes_nothing",
    "corrupt-state-json": "tests.reliability.test_hostile_pretrain::test_corrupt_state_json_is_one_line",
    "dense-mask-too-big": "tests.reliability.test_hostile_pretrain::test_a_dense_attention_mask_that_cannot_fit_is_refused",
    "disk-full-safetensors": "tests.reliability.test_hostile_pretrain::test_disk_full_in_safetensors_is_exit_3",
    "malicious-checkpoint-pickle": "tests.reliability.test_hostile_pretrain::test_a_planted_pickle_runs_nothing_on_resume_or_as_an_init_model",
    "compile-cache-not-private": "tests.reliability.test_compile_cache::test_a_compiled_pretrain_refuses_a_cache_folder_others_can_write_and_writes_nothing",
    "old-layout-checkpoint": "tests.reliability.test_hostile_pretrain::test_a_checkpoint_without_readable_train_state_is_one_line",
    "damaged-train-state": "tests.reliability.test_hostile_pretrain::test_a_checkpoint_without_readable_train_state_is_one_line",
    "checkpoint-config-missing": "tests.reliability.test_hostile_pretrain::test_a_checkpoint_with_a_damaged_model_config_is_one_line",
    "checkpoint-config-truncated": "tests.reliability.test_hostile_pretrain::test_a_checkpoint_with_a_damaged_model_config_is_one_line",
    "load-full-added-token": "tests.train.test_vocab::test_full_state_of_a_run_whose_vocabulary_grows_is_refused_before_writing",
    "init-other-tokenizer": "tests.reliability.test_hostile_pretrain::test_init_model_with_another_tokenizer_is_refused_naming_both_hashes",
    "model-file-for-its-folder": "tests.model.test_near_model::test_a_file_of_a_model_folder_names_the_folder",
    "model-one-level-down": "tests.model.test_near_model::test_a_sentence_transformers_folder_of_the_old_layout_names_its_transformer",
    "init-without-tokenizer": "tests.reliability.test_init_without_tokenizer::test_a_start_model_without_a_tokenizer_on_prepared_data_is_refused_before_the_run_folder",
    "prepare-disk-full": "tests.reliability.test_disk_full::test_prepare_disk_full_is_exit_3_and_the_rerun_completes",
    "merge-disk-full": "tests.reliability.test_disk_full::test_merge_disk_full_is_exit_3_and_the_rerun_completes",
    "eval-disk-full": "tests.reliability.test_disk_full::test_eval_disk_full_is_exit_3_and_the_rerun_resumes",
    "sigterm-any-command": "tests.reliability.test_signals::test_every_command_runs_with_sigterm_as_ctrl_c",
    "sigterm-pretrain": "tests.reliability.test_signals::test_sigterm_stops_pretraining_keeps_its_checkpoints_and_it_resumes",
    "sigterm-rank-waiting-to-join": "tests.train.test_distributed_join::test_a_rank_waiting_for_its_peers_stops_on_sigterm",
    "sigterm-study": "tests.reliability.test_signals::test_sigterm_stops_a_study_and_its_workers_at_once",
    "prepared-other-corpus": "tests.study.test_prepared::test_a_folder_of_another_corpus_tokenizer_or_none_is_refused_in_one_line",
    "prepared-not-prepared": "tests.study.test_prepared::test_a_folder_of_another_corpus_tokenizer_or_none_is_refused_in_one_line",
    "prepared-unknown-dataset": "tests.study.test_prepared::test_a_folder_of_another_corpus_tokenizer_or_none_is_refused_in_one_line",
    "prepared-built-in-trains-its-tokenizer": "tests.study.test_study_cli_wording::test_a_prepared_folder_for_a_built_in_study_that_trains_its_tokenizer_says_how_to_name_it",
    "prepared-other-tokenizer": "tests.study.test_prepared::test_a_folder_of_another_corpus_tokenizer_or_none_is_refused_in_one_line",
    "task-file-label-list-not-multilabel": "tests.eval.test_custom_label_kinds::test_a_label_cell_that_does_not_fit_the_task_is_one_line",
    "task-file-multilabel-not-lists": "tests.eval.test_custom_label_kinds::test_a_label_cell_that_does_not_fit_the_task_is_one_line",
    "task-file-fractional-labels": "tests.eval.test_custom_label_kinds::test_a_score_column_that_does_not_fit_is_one_line",
    "task-file-regression-not-a-number": "tests.eval.test_custom_label_kinds::test_a_score_column_that_does_not_fit_is_one_line",
    "task-file-tags-not-iob": "tests.eval.test_custom_label_kinds::test_entity_f1_over_tags_that_are_not_iob_is_one_line",
    "task-file-f1-not-two-classes": "tests.eval.test_binary_f1::test_an_f1_the_task_does_not_fit_is_one_line_before_anything_is_written",
    "task-file-f1-positive-not-named": "tests.eval.test_binary_f1::test_two_names_read_from_the_data_must_say_which_is_positive",
    "task-file-positive-label-not-a-class": "tests.eval.test_binary_f1::test_an_f1_the_task_does_not_fit_is_one_line_before_anything_is_written",
    "task-file-positive-label-without-f1": "tests.eval.test_binary_f1::test_an_f1_the_task_does_not_fit_is_one_line_before_anything_is_written",
    "task-file-qa-answers-shape": "tests.eval.test_custom_label_kinds::test_qa_answers_not_in_squads_shape_are_one_line",
    "task-file-label-ids-out-of-range": "tests.eval.test_custom_label_kinds::test_class_ids_that_cannot_be_positions_are_one_line",
    "task-file-label-ids-beside-names": "tests.eval.test_custom_label_kinds::test_class_ids_that_cannot_be_positions_are_one_line",
    "task-file-label-ids-beside-unknown": "tests.eval.test_custom_label_kinds::test_class_ids_that_cannot_be_positions_are_one_line",
    "task-file-fraction-leaves-no-train": "tests.eval.test_task_file_splits::test_a_fraction_that_leaves_a_split_empty_is_one_line",
    "task-file-test-and-test-fraction": "tests.eval.test_task_file_splits::test_a_fraction_that_leaves_a_split_empty_is_one_line",
    "task-file-family-not-a-name": "tests.eval.test_task_file_family::test_a_family_that_is_not_one_name_is_refused_by_eval_before_anything_is_written",
    "task-file-id-column-missing": "tests.eval.test_task_file_new_user::test_an_id_column_no_split_has_is_refused_not_dropped",
    "task-file-given-to-tasks": "tests.eval.test_task_file_new_user::test_a_task_file_given_to_tasks_says_task_file",
    "task-file-epochs-and-max-steps": "tests.eval.test_task_file_new_user::test_epochs_beside_max_steps_is_one_line",
    "task-file-tc-tags-count": "tests.eval.test_task_file_new_user::test_tokens_and_tags_of_different_lengths_say_the_fix",
    "task-file-beir-unknown-id": "tests.eval.test_task_file_beir::test_a_mistake_in_a_beir_folder_is_one_line_and_writes_nothing",
    "task-file-beir-qrels-header": "tests.eval.test_task_file_beir::test_a_mistake_in_a_beir_folder_is_one_line_and_writes_nothing",
    "task-file-beir-grade": "tests.eval.test_task_file_beir::test_a_mistake_in_a_beir_folder_is_one_line_and_writes_nothing",
    "task-file-beir-duplicate-id": "tests.eval.test_task_file_beir::test_a_mistake_in_a_beir_folder_is_one_line_and_writes_nothing",
    "task-file-beir-qrels-jsonl": "tests.eval.test_task_file_beir::test_a_mistake_in_a_beir_folder_is_one_line_and_writes_nothing",
    "task-file-beir-hub-no-qrels": "tests.eval.test_task_file_beir::test_a_hub_dataset_without_qrels_says_how_to_join_beirs_qrels_repository",
    "task-file-beir-unreadable": "tests.eval.test_task_file_beir::test_an_unreadable_beir_file_is_one_line_and_writes_nothing",
    "task-file-beir-compressed": "tests.eval.test_task_file_beir_layouts::test_a_corpus_compressed_as_zst_names_the_file_and_the_command_that_unpacks_it",
    "task-file-beir-zip": "tests.eval.test_task_file_beir_layouts::test_a_folder_holding_beirs_zip_archive_says_to_unzip_it",
    "task-file-beir-test-only": "tests.eval.test_task_file_beir_layouts::test_test_only_beir_data_names_paper_1s_zero_shot_tasks_and_the_train_qrels",
    "task-file-beir-train-twice": "tests.eval.test_task_file_beir_layouts::test_data_train_beside_a_folder_with_its_own_train_qrels_is_one_line",
    "task-file-beir-train-no-qrels": "tests.eval.test_task_file_beir_layouts::test_a_data_train_folder_without_train_qrels_is_one_line",
    "task-file-beir-train-not-pairs": "tests.eval.test_task_file_beir_pairs::test_a_beir_corpus_file_named_as_data_train_says_to_name_its_folder",
    "task-file-beir-train-pairs-layout": "tests.eval.test_task_file_beir_pairs::test_msmarco_pairs_layout_without_columns_names_the_mapping",
    "task-file-ir-negative-empty": "tests.eval.test_hard_negatives::test_an_empty_negative_is_refused_naming_the_first_such_row",
    "task-file-ir-negative-not-in-train": "tests.eval.test_hard_negatives::test_a_named_negative_column_only_the_test_split_has_is_refused",
    "task-file-ir-negative-id": "tests.eval.test_hard_negatives::test_a_negative_id_column_is_refused_as_unread",
    "task-file-ir-relevance-column": "tests.eval.test_hard_negatives::test_a_label_column_marking_a_row_not_relevant_is_refused",
    "task-file-ir-cut-takes-every-query": "tests.eval.test_hard_negatives::test_a_cut_that_draws_every_query_is_one_line_naming_the_queries",
    "eval-tasks-unknown-beside-task-files": "tests.eval.test_task_picks::test_unknown_names_in_tasks_beside_task_files_are_one_line",
    "task-file-validation-and-validation-fraction": "tests.eval.test_task_file_splits::test_a_fraction_that_leaves_a_split_empty_is_one_line",
    "task-file-hub-validation-and-validation-fraction": "tests.eval.test_task_file_splits::test_a_validation_fraction_beside_a_hub_validation_split_is_refused",
    "task-file-hub-validation-split-missing": "tests.eval.test_task_file_splits::test_a_hub_validation_mapped_to_a_split_the_dataset_lacks_is_refused",
    "task-file-hub-hidden-labels": "tests.eval.test_task_file_splits::test_a_hub_split_of_hidden_labels_is_refused_where_it_plays",
    "task-file-hub-test-and-test-fraction": "tests.eval.test_task_file_splits::test_a_hub_test_split_mapped_beside_a_test_fraction_is_refused",
    "task-file-hub-fields-beside-local-files": "tests.eval.test_task_file_splits::test_hub_fields_beside_local_files_are_refused",
    "task-file-empty-sentence": "tests.eval.test_task_file_cells::test_a_tc_split_of_empty_sentences_is_refused_when_read",
    "task-file-blank-cell": "tests.eval.test_task_file_cells::test_a_blank_text_cell_is_refused_as_an_empty_one",
    "task-file-blank-label": "tests.eval.test_task_file_cells::test_a_blank_label_is_refused_as_an_empty_one",
    "task-file-qa-id-twice": "tests.eval.test_task_file_cells::test_qa_ids_used_twice_in_a_scored_split_are_refused",
    "task-file-two-fields-one-column": "tests.eval.test_task_file_mistakes::test_two_fields_reading_one_column_are_refused_before_the_data_is_read",
    "task-file-column-not-text": "tests.eval.test_task_file_mistakes::test_a_column_name_that_is_not_text_is_refused_naming_the_field",
    "task-file-ir-id-two-texts": "tests.eval.test_task_file_cells::test_an_ir_id_of_zero_is_an_id_and_an_id_naming_two_texts_is_refused",
    "hub-mirror-csv-column-named-twice": "tests.eval.test_task_csv_cells::test_a_hub_csv_mirror_is_checked_as_task_files_are",
    "hub-mirror-csv-unclosed-quote": "tests.eval.test_task_csv_cells::test_a_hub_mirror_csv_with_an_unclosed_quote_is_one_line",
    "hub-cache-dataset-config-unknown": "tests.eval.test_hub_cache_task_files::test_a_config_left_out_or_unknown_offline_names_the_configs_not_the_connection",
    "hub-export-config-unknown": "tests.eval.test_hub_export_config::test_an_export_config_left_out_or_unknown_names_the_exports_configs",
    "hub-export-config-missing": "tests.eval.test_hub_export_refusals::test_a_built_in_tasks_export_lacking_its_config_or_splits_names_what_it_has",
    "hub-export-splits-missing": "tests.eval.test_hub_export_refusals::test_a_built_in_tasks_export_lacking_its_config_or_splits_names_what_it_has",
    "task-file-hub-validation-named-otherwise": "tests.eval.test_hub_export_config::test_an_export_validation_split_named_dev_is_mapped_or_refused_never_left_unread",
    "hub-cache-dataset-revision-not-cached": "tests.eval.test_hub_cache_task_files::test_a_revision_the_hub_cache_lacks_offline_names_what_it_holds_and_the_download",
    "study-task-test-split-changed-while-running": "tests.study.test_task_file_decontamination::test_a_test_split_edited_after_the_graph_was_built_is_refused_before_the_prepare_writes",
    "hub-cache-dataset-not-cached": "tests.eval.test_hub_cache_task_files::test_a_dataset_the_hub_cache_holds_nothing_of_offline_names_the_download_and_the_variable",
    "hub-snapshot-csv-unclosed-quote": "tests.eval.test_hub_csv_snapshot::test_a_malformed_csv_in_the_hub_cache_snapshot_says_so_not_check_your_connection",
    "hub-snapshot-csv-column-named-twice": "tests.eval.test_hub_csv_snapshot::test_a_hub_cache_snapshot_failing_the_task_file_checks_is_said_malformed_as_published",
    "hub-snapshot-incomplete": "tests.eval.test_hub_csv_snapshot::test_a_snapshot_whose_fetch_was_cut_short_is_refused_offline_not_read_short",
    "hub-snapshot-incomplete-listed": "tests.eval.test_hub_snapshot_tree::test_a_snapshot_of_some_files_only_is_refused_offline_naming_those_the_repo_lists",
    "hub-snapshot-card-missing": "tests.eval.test_hub_snapshot_tree::test_a_snapshot_lacking_the_card_its_file_list_names_says_so_not_check_your_connection",
    "hub-snapshot-unchecked": "tests.eval.test_hub_snapshot_tree::test_a_snapshot_neither_fetched_by_encoderlab_nor_listed_is_refused_offline_not_read_as_it_is",
    "hub-snapshot-kind-unread": "tests.eval.test_hub_snapshot_unread::test_a_snapshot_of_a_kind_encoderlab_does_not_read_there_says_so_not_check_your_connection",
    "hub-datasets-internals-missing": "tests.eval.test_hub_kinds::test_a_datasets_lacking_a_function_hubtree_reads_is_one_line",
    "hub-snapshot-record-damaged": "tests.eval.test_hub_csv_snapshot::test_a_damaged_snapshot_record_is_one_line_whose_fix_reads_the_dataset_whole",
    "hub-json-empty-file": "tests.eval.test_hub_csv_snapshot::test_an_empty_json_file_of_a_hub_dataset_names_no_mirror",
    "task-file-first-row-wider-than-header": "tests.eval.test_task_csv_cells::test_a_first_row_wider_than_the_header_is_one_line",
    "task-file-class-named-twice": "tests.eval.test_task_file_cells::test_a_class_named_twice_in_labels_is_refused",
    "task-file-qa-negative-offset": "tests.eval.test_task_file_cells::test_empty_qa_cells_and_negative_offsets_are_refused",
    "advise-over-foreign": "tests.advise.test_advise_commands::test_bad_inputs_are_one_line_and_create_nothing",
    "advise-not-a-ladder": "tests.advise.test_advise_refusals::test_a_ladder_file_of_one_scale_is_not_a_ladder",
    "advise-target-below-ladder": "tests.advise.test_advise_commands::test_a_target_below_the_ladder_is_refused_and_creates_nothing",
    "advise-target-size-below-ladder": "tests.advise.test_advise_commands::test_a_size_target_below_every_run_is_refused_and_creates_nothing",
    "advise-flops-on-some-runs": "tests.advise.test_advise_refusals::test_measured_flops_on_some_runs_only_are_refused",
    "advise-study-logged-count-not-a-count": "tests.advise.test_studyread::test_a_logged_count_edited_to_no_count_is_one_line",
    "advise-study-run-without-config": "tests.advise.test_studyread::test_a_finished_run_without_its_config_says_what_to_restore",
    "advise-study-metrics-cut-short": "tests.advise.test_studyread::test_a_finished_runs_metrics_cut_short_are_refused_and_create_nothing",
    "advise-study-all-continued": "tests.advise.test_studyread::test_a_study_whose_finished_runs_all_continue_a_model_is_refused_for_that",
    "bench-table-result-twice": "tests.bench.test_table::test_bench_table_refuses_a_result_given_twice",
    "bench-cuda-not-visible": "tests.bench.test_train::test_device_cuda_without_a_gpu_names_bench_trains_own_flag",
    "advise-other-held-out-rows": "tests.advise.test_advise_refusals::test_studies_scored_on_other_held_out_rows_are_refused",
    "advise-other-finetune-setup": "tests.advise.test_advise_refusals::test_fine_tuning_scores_of_other_setups_are_refused",
    "advise-ceiling-of-a-loss": "tests.advise.test_advise_commands::test_a_direction_or_ceiling_the_metric_cannot_take_is_refused",
    "advise-better-against-the-metric": "tests.advise.test_advise_commands::test_a_direction_or_ceiling_the_metric_cannot_take_is_refused",
    "ladder-design-budget-not-positive": "tests.advise.test_ladder_study::test_budgets_that_are_no_tokens_per_parameter_are_refused",
    "ladder-design-layout-not-positive": "tests.advise.test_ladder_study::test_a_layout_of_no_tokens_is_refused_in_one_line",
    "advise-api-huber-delta-out-of-range": "tests.advise.test_advise_api_options::test_an_option_out_of_range_is_refused_alike_by_the_api_and_the_command",
    "advise-holdout-one-schedule": "tests.advise.test_holdout::test_a_largest_size_that_one_schedule_ran_is_refused",
    "advise-one-schedule-two-labels": "tests.advise.test_holdout::test_two_labels_of_one_schedule_are_refused_naming_both_runs",
    "two-evals-one-out": "tests.eval.test_eval_commands::test_a_second_eval_into_the_same_out_is_refused_while_the_first_runs",
    "two-writers-one-tmp-sibling": "tests.test_atomic::test_a_sibling_another_live_process_fills_is_refused_and_left_to_it",
    "eval-unknown-clf-pooling": "tests.eval.test_model_pooling::test_a_clf_pooling_encodeval_cannot_use_is_one_line",
    "curves-two-poolings": "tests.eval.test_model_pooling::test_a_changed_clf_pooling_is_evaluated_again_under_its_own_key",
    "cka-twin-is-a": "tests.analysis.test_commands::test_cka_refuses_a_twin_with_the_weights_of_a",
    "cka-twin-other-architecture": "tests.analysis.test_commands::test_cka_refuses_a_twin_of_another_architecture_than_b",
    "cka-twin-other-tokenizer": "tests.analysis.test_commands::test_cka_refuses_a_twin_with_another_tokenizer_than_b",
    "cka-features-not-finite": "tests.analysis.test_broken_inputs::test_a_model_with_nan_weights_is_refused_not_read_as_constant_features",
    "cka-texts-read-as-one-input": "tests.analysis.test_broken_inputs::test_texts_the_tokenizer_reads_as_one_input_are_refused_not_reported_as_nan",
    "cka-texts-repeated": "tests.analysis.test_broken_inputs::test_texts_written_twice_do_not_pass_the_minimum_of_cka",
    "probe-label-null": "tests.analysis.test_probe::test_a_null_label_is_named_as_null_not_as_missing",
    "probe-token-task-no-words": "tests.analysis.test_probe::test_a_token_task_without_a_word_is_refused_when_loaded",
    "probe-split-without-words": "tests.analysis.test_probe::test_a_split_whose_words_are_all_blank_is_refused_in_one_line",
    "probe-features-not-finite": "tests.analysis.test_broken_inputs::test_a_probe_of_a_model_with_nan_weights_is_refused_not_scored_below_chance",
    "probe-texts-read-as-one-input": "tests.analysis.test_broken_inputs::test_a_probe_of_texts_the_tokenizer_reads_as_one_input_is_refused_not_scored",
    "probe-task-empty": "tests.analysis.test_broken_inputs::test_an_empty_probing_task_is_named_empty_with_nothing_written",
    "study-freeze-preset-too-shallow": "tests.study.test_freeze_depth::test_a_freeze_preset_on_a_model_of_two_layers_is_refused_before_anything_runs",
}  # fmt: skip

# Every command by what it writes. A folder or a file: the catalogue row proving that it refuses
# someone else's and changes nothing in it (the asset cache: an entry of one's own in it). None: the
# command writes nothing.
WRITES = {
    "advise": "advise-over-foreign",
    "analyze cka": "cka-over-foreign",
    "analyze transplant": "transplant-over-foreign",
    "analyze probe": "probe-over-foreign",
    "analyze curves": "curves-over-foreign",
    "assets list": None,
    "assets fetch": "assets-cache-entry-not-fetched",
    "data tokenizer": "tokenizer-over-foreign",
    "data prepare": "prepare-into-foreign-meta",
    "data merge": "merge-into-foreign",
    "data inspect": None,
    "export": "export-over-foreign",
    "eval": "eval-foreign-results",
    "bench data": "bench-data-out-foreign-file",
    "bench train": "bench-out-foreign-file",
    "bench table": None,
    "pretrain": "foreign-out",
    "recipes": None,
    "study run": "study-over-foreign",
    "study plan": None,
    "study show": None,
    "study list": None,
    "study report": "report-not-a-study",
    "study status": None,
}
REFUSES_FOREIGN = re.compile(
    r"did not create|exists and is not|is not a study folder|is a file, not a folder"
)


def _table_cases() -> dict[str, tuple[str | None, str]]:
    """Case id -> (argv or None, pattern) of the parametrized tables."""
    cases = {c[0]: (c[1], c[2]) for c in [*CASES, *DATA_CASES, *ARGUMENT_CASES, *STUDY_CASES, *MODEL_CASES]}
    cases.update({c[0]: (None, c[2]) for c in REFUSED_BEFORE_WRITING})
    return cases


def test_every_row_has_a_test_and_every_case_a_row():
    rows, cases = doc_rows(), _table_cases()
    assert not set(cases) & set(NAMED), "a case is both in a table and named"
    assert sorted(set(rows) - set(cases) - set(NAMED)) == [], "rows of docs/errors.md without a test"
    assert sorted(set(cases) - set(rows)) == [], "table cases without a row in docs/errors.md"
    assert sorted(set(NAMED) - set(rows)) == [], "NAMED lists cases that have no row"


@pytest.mark.parametrize("case", sorted(NAMED))
def test_a_named_test_exists(case):
    """Read, not imported: test modules import their fixtures by bare name (pytest's prepend mode)."""
    module, function = NAMED[case].split("::")
    source = ROOT.joinpath(*module.split(".")).with_suffix(".py").read_text(encoding="utf-8")
    assert re.search(rf"^def {function}\(", source, re.MULTILINE), NAMED[case]


@pytest.mark.parametrize("case", sorted(_table_cases()))
def test_a_rows_command_and_message_are_the_tests(case):
    command, message, code, own_message = doc_rows()[case]
    argv, pattern = _table_cases()[case]
    assert code == "2", case
    if own_message:  # {w} stands for the test's scratch folder, an absolute path
        assert re.search(pattern, message.replace("{w}", "/w")), (
            f"docs/errors.md's message for {case} does not match {pattern!r}"
        )
    if argv is not None and "..." not in command:  # a row may shorten a long command
        assert command.split() == ["encoderlab", *argv.split()], case


def _leaves(node: dict, path: tuple[str, ...] = ()) -> list[str]:
    return [
        name
        for word, sub in node.items()
        for name in ([" ".join((*path, word))] if isinstance(sub, str) else _leaves(sub, (*path, word)))
    ]


def test_every_command_is_classified_by_what_it_writes():
    assert sorted(_leaves(COMMANDS)) == sorted(WRITES), "classify the new command in WRITES"
    rows = doc_rows()
    for command, case in WRITES.items():
        if case is not None:
            assert case in rows, f"{command}: no row {case} in docs/errors.md"
            assert REFUSES_FOREIGN.search(rows[case][1]), f"{command}: row {case} refuses nothing"
