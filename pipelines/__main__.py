from pipelines.cli.app import main

main(prog_name="goodput")
