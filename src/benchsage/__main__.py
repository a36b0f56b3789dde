from benchsage.cli import main

main()
