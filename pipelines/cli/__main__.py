from pipelines.cli.app import main

main()
